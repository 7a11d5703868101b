"""The real window, for a screen reader to read: the services on a fresh DuckDB file in the
data folder given, a chat with a branch in it, the loopback provider for replies, the
Inspector open on the graph and Settings open. Run with the venv's python on an X display
with accessibility on; it says "ready" on stdout, then takes commands on stdin:

    send TEXT    sends TEXT in the open chat; says "finished" when the reply is in
    quit         closes the window
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from PySide6.QtWidgets import QApplication
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.app import connect_services, create_window
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store, default_store_path
from treechat.ui.shell.event_loop import create_event_loop

MODEL = "openai/loopback-model"
REPLY = "Ember is a small red dragon who sleeps in a cave."


def seed(data_dir: Path) -> None:
    store = Store.open(default_store_path(data_dir))
    try:
        store.call(lambda r: r.create_session(
            Session("dragon", "Dragons", None, MODEL, 1_000.0, updated_at=1_000.0)))
        texts = ["Tell me about a dragon", "It breathes fire.", "What is its name?",
                 "Its name is Ember."]
        nodes, previous = [], None
        for i, text in enumerate(texts):
            node = Node(f"dragon-{i}", 0, 1_000.0 + i, "dragon",
                        "user" if i % 2 == 0 else "assistant", output=text,
                        predecessor=previous)
            nodes.append(node)
            previous = node.id
        retry = Node("dragon-1b", 0, 1_010.0, "dragon", "assistant",
                     output="It sleeps on gold.", predecessor="dragon-0")
        store.call(lambda r: r.apply_change("dragon", Change((*nodes, retry), previous),
                                            1_010.0))
    finally:
        store.close()


async def main(data_dir: Path) -> None:
    app = QApplication.instance()
    assert isinstance(app, QApplication)
    provider = LoopbackProvider()
    services = build_services(
        data_dir, bundled=False, detect_local_servers=False, keys=KeyStore(environ={}),
        extra_models=(ModelChoice(MODEL, "Loopback", "openai", api_base=provider.openai_base),),
    )
    services.models.default_model = MODEL
    window, prefs, theme = create_window(app, data_dir)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    await controller.start("dragon")
    window.dock.show()
    controller.dialogs.open_settings()
    loop = asyncio.get_running_loop()
    print("ready", flush=True)
    while True:
        line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
        if not line or line == "quit":
            break
        verb, _, text = line.partition(" ")
        if verb == "send":
            settings = controller.dialogs.settings_dialog
            if settings is not None:
                settings.reject()
            provider.queue(Reply(text=REPLY))
            before = len(provider.requests)
            window.composer.set_text(text)
            window.composer.submit()
            while len(provider.requests) <= before or controller.turns.is_running():
                await asyncio.sleep(0.05)
            await controller.tasks.idle()
            print("finished", flush=True)
    await controller.close()
    await services.close()
    services.close_store()
    provider.stop()
    window.close_now()


if __name__ == "__main__":
    folder = Path(sys.argv[1])
    seed(folder)
    application = QApplication(sys.argv[:1])
    application.setApplicationName("Treechat")
    event_loop = create_event_loop(application)
    event_loop.run_until_complete(main(folder))
