"""Regenerates connections-*.png and picker-*.png: Settings → Connections with an
OpenAI-compatible server added by its URL, one that has stopped answering, a hosted
provider with a key, and Ollama found on this machine; and the model picker grouped by
connection, in light and dark. The servers are loopback ones from tests/support. Run from
the repository root under a display (Xvfb works):

    PYTHONPATH=. xvfb-run -s "-screen 0 1600x1000x24" .venv/bin/python \
        docs/screenshots/capture_connections.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from keyring.backends import fail
from PySide6.QtCore import QRect
from PySide6.QtWidgets import QApplication, QTabWidget, QWidget
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer

from treechat.app import connect_services, create_window
from treechat.providers.keys import KeyStore
from treechat.providers.local.server_detection import LocalServers, ServerSpec
from treechat.services.bootstrap import build_services
from treechat.ui.shell.event_loop import close_event_loop, create_event_loop

OUT = Path(__file__).resolve().parent


async def settle(seconds: float = 0.6) -> None:
    await asyncio.sleep(seconds)  # the qasync loop paints meanwhile


def save(widget: QWidget, name: str) -> None:
    path = OUT / f"{name}.png"
    widget.grab().save(str(path))
    print("wrote", path)


def save_region(widgets: list[QWidget], name: str) -> None:
    """The screen where the widgets are (a popup is its own window: grab both at once)."""
    rect = QRect()
    for w in widgets:
        rect = rect.united(QRect(w.mapToGlobal(w.rect().topLeft()), w.size()))
    screen = QApplication.primaryScreen()
    path = OUT / f"{name}.png"
    screen.grabWindow(0, rect.x(), rect.y(), rect.width(), rect.height()).save(str(path))
    print("wrote", path)


async def scenario(app: QApplication, data_dir: Path) -> None:
    lab = OpenAIServer([
        {"id": "qwen2.5-coder-14b", "object": "model", "context_length": 32_768},
        {"id": "mistral-nemo-12b", "object": "model", "context_length": 131_072},
    ])
    gone = OpenAIServer([{"id": "deepseek-r1-distill-8b", "object": "model"}])
    ollama = OllamaServer([OllamaModel("llama3.2:3b", context_length=131_072),
                           OllamaModel("qwen3:8b", context_length=40_960)])
    services = build_services(
        data_dir, bundled=False, detect_local_servers=False,
        local_servers=LocalServers([ServerSpec("ollama", "Ollama", ollama.url)]),
        keys=KeyStore(backend=fail.Keyring(), environ={}),
    )
    connections = services.models.connections
    await connections.add("openai-compatible", "lab", base_url=lab.url, label="Lab server")
    await connections.add("openai-compatible", "studio-box", base_url=gone.url,
                          label="Studio box")
    gone.stop()
    await connections.refresh_one("studio-box")
    await connections.add("hosted", "openai", provider="openai", api_key="sk-demo-not-real",
                          label="OpenAI")
    window, prefs, theme = create_window(app, data_dir)
    window.resize(1180, 760)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    await controller.start()
    connections.start_detection(interval=None)
    await settle(1.5)
    controller.models.set_model("lab/qwen2.5-coder-14b")
    window.composer.select_model("lab/qwen2.5-coder-14b")
    for mode in ("light", "dark"):
        theme.set_mode(mode)
        await settle()
        picker = window.composer.picker
        picker.showPopup()
        await settle()
        save_region([window, picker.popup], f"picker-{mode}")
        picker.popup.search.setText("qwen")
        await settle(0.3)
        save_region([window, picker.popup], f"picker-search-{mode}")
        picker.hidePopup()
        controller.dialogs.open_settings()
        dialog = controller.dialogs.settings_dialog
        assert dialog is not None and dialog.connections_page is not None
        tabs = dialog.findChild(QTabWidget)
        assert tabs is not None
        tabs.setCurrentWidget(dialog.connections_page)
        dialog.resize(760, 520)
        await settle()
        save(dialog, f"connections-{mode}")
        page = dialog.connections_page
        page.select("lab")
        page.test_button.click()
        for _ in range(100):
            await settle(0.1)
            if "Testing" not in page.status.text():
                break
        save(dialog, f"connections-test-{mode}")
        page.add_button.click()
        await settle()
        assert page.editor is not None
        page.editor.url.setText("http://192.168.1.20:8000/v1")
        await settle(0.2)
        save(page.editor, f"connections-add-{mode}")
        page.editor.reject()
        dialog.reject()
        await settle(0.2)
    await controller.close()
    await services.close()
    services.close_store()
    window.close_now()
    lab.stop()
    ollama.stop()


def main() -> int:
    app = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        loop = create_event_loop(app)
        try:
            loop.run_until_complete(scenario(app, Path(tmp)))
        finally:
            close_event_loop(loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
