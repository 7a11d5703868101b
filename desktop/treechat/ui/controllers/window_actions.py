"""The window's menus and shortcuts, wired to the controllers that carry them out; once
wired, the window lets the user in."""

from __future__ import annotations

from ..common.safe_controls import guard_wheel
from ..shell.main_window import MainWindow
from .backups import BackupsController
from .beam import add_beam_controls
from .chat_controls import add_chat_controls
from .conversation import ConversationController


def connect_window_actions(window: MainWindow, c: ConversationController) -> None:
    window.new_chat_action.triggered.connect(c.new_chat)
    window.settings_action.triggered.connect(c.dialogs.open_settings)
    window.import_action.triggered.connect(lambda *_: c.dialogs.open_import_dialog())
    window.local_models_action.triggered.connect(lambda *_: c.dialogs.open_model_library())
    window.stop_action.triggered.connect(c.turns.stop)
    window.retry_action.triggered.connect(lambda *_: c.turns.retry())
    window.previous_version_action.triggered.connect(lambda: c.graph_ops.step_version(-1))
    window.next_version_action.triggered.connect(lambda: c.graph_ops.step_version(1))
    window.context_action.triggered.connect(c.occupancy.open_dialog)
    window.compact_action.triggered.connect(c.occupancy.compact)
    window.resource_menu.aboutToShow.connect(lambda: c.mcp.resource_menu(window.resource_menu))
    window.shortcuts_action.triggered.connect(lambda *_: c.dialogs.open_shortcuts(
        window.shortcut_list()))
    window.about_action.triggered.connect(lambda *_: c.dialogs.open_about())
    window.report_action.triggered.connect(lambda *_: c.dialogs.copy_problem_report())
    c.busyChanged.connect(window.set_busy)
    add_chat_controls(window, c)
    c.backups = BackupsController(window, c)
    c.beam = add_beam_controls(window, c)
    guard_wheel(window)  # the model picker and every other box: no change by a passing wheel
    window.set_ready(True)
