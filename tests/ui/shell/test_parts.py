"""The parts of the window the controllers drive: the widgets the window laid out, its
status line, and the one namer of models the chat's headers use."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.clock import SYSTEM_CLOCK
from treechat.ui.shell.main_window import MainWindow


def test_the_parts_are_the_windows_own_widgets(qtbot: QtBot) -> None:
    window = MainWindow()
    qtbot.addWidget(window)
    window.build()
    parts = window.parts(SYSTEM_CLOCK)
    assert parts.window is window and parts.composer is window.composer
    assert parts.sessions is window.sessions and parts.chat is window.chat
    assert parts.dock is window.dock and parts.dock_tabs.count() == 2
    parts.status("Saved")
    assert window.statusBar().currentMessage() == "Saved"
    parts.show_view(None)
    assert window.title.text() == "New chat"
    parts.set_model_namer(lambda model: f"Named {model}")
    assert parts.chat.model.model_name("o3") == "Named o3"
