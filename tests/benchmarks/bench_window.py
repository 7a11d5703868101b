"""The running window the benchmarks drive: real services on a store in a data directory,
one model to talk to, the window shown on a qasync loop; and its orderly close."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import qasync
from PySide6.QtCore import QEvent
from PySide6.QtWidgets import QApplication

from treechat.app import connect_services, create_window
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.ui.controllers.conversation import ConversationController
from treechat.ui.shell.event_loop import close_event_loop, create_event_loop
from treechat.ui.shell.main_window import MainWindow

SIZE = (1180, 760)


@dataclass
class BenchWindow:
    loop: qasync.QEventLoop
    services: Services
    window: MainWindow
    controller: ConversationController


def open_window(qapp: QApplication, data_dir: Path, model: ModelChoice) -> BenchWindow:
    """The window on `data_dir`, `model` its default, shown (the controller not started)."""
    loop = create_event_loop(qapp)
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              keys=KeyStore(environ={}), extra_models=(model,))
    services.models.default_model = model.id
    window, prefs, theme = create_window(qapp, data_dir)
    window.resize(*SIZE)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    return BenchWindow(loop, services, window, controller)


def close_window(bench: BenchWindow) -> None:
    """Stop the controller and the services, then delete the window while its loop still
    runs (its timers go with it)."""
    loop = bench.loop
    try:
        loop.run_until_complete(bench.controller.close())
        loop.run_until_complete(bench.services.close())
    finally:
        bench.services.close_store()
        bench.window.close_now()
        bench.window.deleteLater()
        QApplication.sendPostedEvents(None, QEvent.Type.DeferredDelete)
        close_event_loop(loop)
