"""What the chat controls' tests share: the window's controls, a send, waiting for a turn,
and screenshots for the docs on request."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QTableWidget, QWidget

from treechat.ui.controllers.chat_controls import ChatControls

from ..conftest import Aio, Desk

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


def shoot(desk: Desk, name: str, widget: QWidget | None = None) -> None:
    """With TREECHAT_SCREENSHOTS=1 (on a real display), save `widget` (the window when not
    given) as docs/screenshots/controls-<name>-light.png and -dark.png."""
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    from PySide6.QtWidgets import QApplication

    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        for _ in range(5):
            QApplication.processEvents()
        (widget or desk.window).grab().save(str(SHOTS / f"controls-{name}-{mode}.png"))
    desk.theme.set_mode("light")


def cell(table: QTableWidget, row: int, column: int) -> str:
    item = table.item(row, column)
    assert item is not None
    return item.text()


def controls(desk: Desk) -> ChatControls:
    found = desk.window.findChild(ChatControls, "ChatControls")
    assert isinstance(found, ChatControls)
    return found


def send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def system_of(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")
