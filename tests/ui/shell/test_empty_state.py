"""The page a new chat shows: a title that says where the chats are, and every shortcut of
the first hour with its keys right-aligned beside what it does."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from treechat.ui.shell.empty_state import SHORTCUTS_HELP, EmptyState, placeholder_page


def test_the_empty_state_lists_each_shortcut_once(qtbot: QtBot) -> None:
    page = EmptyState()
    qtbot.addWidget(page)
    assert page.title.text() == "Opening your chats…"
    texts = [label.text() for label in page.findChildren(QLabel)]
    for keys, what in SHORTCUTS_HELP:
        assert texts.count(keys) == 1 and texts.count(what) == 1
    assert ("Esc", "Stop the reply") in SHORTCUTS_HELP
    assert page.title.font().pointSizeF() > QLabel().font().pointSizeF()


def test_a_placeholder_says_what_will_be_there(qtbot: QtBot) -> None:
    page = placeholder_page("The history graph of this chat.")
    qtbot.addWidget(page)
    (label,) = page.findChildren(QLabel)
    assert label.text() == "The history graph of this chat." and label.wordWrap()
