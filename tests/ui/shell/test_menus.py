"""A menu action works anywhere in its window, and Help lists every shortcut the window
answers to, the empty state's hints first, without naming a key twice."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence
from PySide6.QtWidgets import QMainWindow
from pytestqt.qtbot import QtBot

from treechat.ui.shell.empty_state import SHORTCUTS_HELP
from treechat.ui.shell.menus import add_action, shortcut_list


def test_an_action_has_its_shortcuts_and_runs_its_slot(qtbot: QtBot) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)
    menu = window.menuBar().addMenu("&Chat")
    ran: list[bool] = []
    action = add_action(window, menu, "Compact now", ("Ctrl+Shift+J", "F9"),
                        lambda: ran.append(True))
    assert [s.toString() for s in action.shortcuts()] == ["Ctrl+Shift+J", "F9"]
    assert action.shortcutContext() == Qt.ShortcutContext.WindowShortcut
    assert action in menu.actions() and action in window.actions()
    action.trigger()
    assert ran == [True]


def test_help_lists_the_hints_then_each_other_shortcut(qtbot: QtBot) -> None:
    window = QMainWindow()
    qtbot.addWidget(window)
    menu = window.menuBar().addMenu("&File")
    add_action(window, menu, "New chat", ("Ctrl+N",))  # the hints name it already
    add_action(window, menu, "&Import…", ("Ctrl+I",))
    add_action(window, menu, "Report a problem…")  # no keys: not a shortcut
    rows = shortcut_list(window)
    assert rows[: len(SHORTCUTS_HELP)] == list(SHORTCUTS_HELP)
    extra = rows[len(SHORTCUTS_HELP):]
    native = QKeySequence("Ctrl+I").toString(QKeySequence.SequenceFormat.NativeText)
    assert [what for _keys, what in extra] == ["Import"]
    assert native in extra[0][0]
