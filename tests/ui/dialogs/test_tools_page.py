"""Settings → Tools on the real services and real MCP servers (the SDK's, over stdio): a
server added by hand starts and lists its tools, its default and enabled switch and a tool's
protection are saved, a server that cannot start shows why, a pasted or chosen configuration
is imported with its problems said, and a server is removed."""

from __future__ import annotations

import json
import os
import shlex
import sys
from pathlib import Path

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMessageBox, QPushButton, QTabWidget, QWidget
from tests.support.mcp_fixtures import SERVER_SCRIPT

from treechat.ui.dialogs.settings import SettingsDialog
from treechat.ui.dialogs.tools_page import ToolsPage

from ..conftest import Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def shoot(desk: Desk, name: str, widget: QWidget) -> None:
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        for _ in range(5):
            QApplication.processEvents()
        widget.grab().save(str(SHOTS / f"settings-{name}-{mode}.png"))
    desk.theme.set_mode("light")


def open_page(desk: Desk) -> tuple[SettingsDialog, ToolsPage]:
    desk.controller.dialogs.open_settings()
    dialog = desk.controller.dialogs.settings_dialog
    assert dialog is not None and dialog.tools_page is not None
    return dialog, dialog.tools_page


def server_command(name: str, secret: str) -> str:
    return shlex.join([sys.executable, str(SERVER_SCRIPT), "--name", name, "--secret", secret])


def labels(page: ToolsPage) -> list[str]:
    return [page.servers.item(i).text() for i in range(page.servers.count())]


def test_add_start_set_protect_and_remove(desk: Desk, aio: Aio) -> None:
    mcp = desk.services.mcp
    assert mcp is not None
    dialog, page = open_page(desk)

    async def scenario() -> None:
        await desk.controller.tasks.idle()
        assert not page.empty.isHidden() and page.details.isHidden()
        page.name_field.setText("alpha")
        page.command_field.setText(server_command("alpha", "s-1"))
        page.env_field.setPlainText("GREETING=hello")
        page.add_button.click()
        await aio.until(lambda: labels(page) == ["alpha — not started"], what="added")
        assert mcp.config("alpha").env == {"GREETING": "hello"}
        assert mcp.config("alpha").args[0] == str(SERVER_SCRIPT)

        page.restart_button.click()
        await aio.until(lambda: labels(page) == ["alpha — ready"], what="ready")
        await aio.until(lambda: page.tools.topLevelItemCount() > 0, what="tools listed")
        names = [page.tools.topLevelItem(i).text(0) for i in range(page.tools.topLevelItemCount())]
        assert "secret_value" in names and "slow" in names
        assert "Status: ready" in page.status.text()
        tabs = dialog.findChild(QTabWidget)
        assert tabs is not None
        tabs.setCurrentWidget(page)
        shoot(desk, "tools", dialog)

        page.policy.setCurrentIndex(page.policy.findData("deny"))
        await aio.until(lambda: mcp.config("alpha").policy == "deny", what="policy saved")
        page.enabled.setChecked(False)
        await aio.until(lambda: not mcp.config("alpha").enabled, what="disabled")
        await aio.until(lambda: labels(page)[0].endswith("(disabled)"), what="shown")
        (item,) = page.tools.findItems("secret_value", Qt.MatchFlag.MatchExactly, 0)
        item.setCheckState(1, Qt.CheckState.Checked)
        await aio.until(lambda: ("alpha", "secret_value") in mcp.protected(), what="protected")

        page.remove_button.click()
        box = page.confirmation
        assert isinstance(box, QMessageBox) and box.isVisible()
        QTest.keyClick(box, Qt.Key.Key_Return)  # Enter is Cancel: nothing is removed
        await aio.settle(0.2)
        assert labels(page) != []
        page.remove_button.click()
        (remove,) = [b for b in page.confirmation.buttons() if b.text() == "Remove"]
        remove.click()
        await aio.until(lambda: labels(page) == [], what="removed")
        assert mcp.configs() == [] and not page.empty.isHidden()

    aio.run(scenario(), timeout=120)
    dialog.close()


def test_a_server_that_cannot_start_says_why(desk: Desk, aio: Aio) -> None:
    dialog, page = open_page(desk)

    async def scenario() -> None:
        await desk.controller.tasks.idle()
        page.name_field.setText("broken")
        page.command_field.setText("/nonexistent/treechat-mcp-server --flag")
        page.add_button.click()
        await aio.until(lambda: page.selected_name() == "broken", what="added")
        page.restart_button.click()
        await aio.until(lambda: labels(page) == ["broken — failed"], what="failed")
        assert "Status: failed —" in page.status.text()

        page.name_field.setText("half")
        page.command_field.setText("")
        page.add_button.click()
        await aio.settle()
        assert "needs a command" in page.add_message.text()

    aio.run(scenario(), timeout=120)
    dialog.close()


def test_import_pasted_and_from_a_file(desk: Desk, aio: Aio, tmp_path: Path) -> None:
    mcp = desk.services.mcp
    assert mcp is not None
    dialog, page = open_page(desk)
    pasted = json.dumps({"mcpServers": {
        "alpha": {"command": sys.executable, "args": [str(SERVER_SCRIPT), "--name", "alpha"]},
        "nothing": {"args": ["x"]},
    }})
    chosen = tmp_path / "cursor-mcp.json"
    chosen.write_text(json.dumps({"mcpServers": {"web": {"url": "http://127.0.0.1:9/mcp"}}}))

    async def scenario() -> None:
        await desk.controller.tasks.idle()
        page.import_text.setPlainText(pasted)
        page.import_button.click()
        await aio.until(lambda: "Added" in page.import_message.text(), what="imported")
        assert page.import_message.text().startswith("Added alpha.")
        assert "nothing" in page.import_message.text()  # the skipped entry, and why
        page.import_file(str(chosen))
        await aio.until(lambda: "web" in page.import_message.text(), what="file imported")
        assert [c.name for c in mcp.configs()] == ["alpha", "web"]
        page.import_text.setPlainText("{not json")
        page.import_button.click()
        await aio.until(lambda: "not JSON" in page.import_message.text(), what="refused")
        assert len(mcp.configs()) == 2

    aio.run(scenario(), timeout=120)
    dialog.close()


def wheel(widget: QWidget, steps: int) -> None:
    centre = QPointF(widget.rect().center())
    event = QWheelEvent(centre, QPointF(widget.mapToGlobal(centre.toPoint())), QPoint(0, 0),
                        QPoint(0, 120 * steps), Qt.MouseButton.NoButton,
                        Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(widget, event)


def test_no_button_is_pressed_by_enter_and_the_wheel_changes_no_setting(
    desk: Desk, aio: Aio
) -> None:
    mcp = desk.services.mcp
    assert mcp is not None
    dialog, page = open_page(desk)

    async def scenario() -> None:
        await desk.controller.tasks.idle()
        page.name_field.setText("alpha")
        page.command_field.setText(server_command("alpha", "s-1"))
        page.add_button.click()
        await aio.until(lambda: labels(page) == ["alpha — not started"], what="added")
        assert not any(b.autoDefault() for b in page.findChildren(QPushButton))
        assert page.policy.currentData() == "ask"

        wheel(page.policy, -1)  # scrolling the page over "Tool calls"
        wheel(page.policy, -2)
        await aio.settle(0.2)
        assert page.policy.currentData() == "ask" and mcp.config("alpha").policy == "ask"
        page.policy.setFocus()  # the person chose it: now the wheel steps it
        wheel(page.policy, -1)
        assert page.policy.currentData() != "ask"

    aio.run(scenario(), timeout=120)
    dialog.close()
