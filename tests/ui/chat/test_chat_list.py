"""The chat's list: arriving by keyboard lands on the newest message, moving with the arrow
keys brings the message into view, and it scrolls by lines, not whole messages."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from treechat.ui.chat.view import ChatView

from ..session_views import chain, session_view, shown_chat


def long_chat(qtbot: QtBot) -> ChatView:
    return shown_chat(qtbot, session_view(chain(40, repeat=20)), (600, 400))


def test_the_keyboard_lands_on_the_newest_message_and_walks_into_view(qtbot: QtBot) -> None:
    chat = long_chat(qtbot)
    chat.list.setFocus(Qt.FocusReason.TabFocusReason)
    qtbot.waitUntil(lambda: chat.list.currentIndex().isValid(), timeout=3000)
    assert chat.list.currentIndex().row() == chat.model.rowCount() - 1
    for _ in range(12):
        QTest.keyClick(chat.list, Qt.Key.Key_Up)
    current = chat.list.currentIndex()
    assert current.row() == chat.model.rowCount() - 13
    assert chat.list.viewport().rect().intersects(chat.list.visualRect(current))


def test_it_scrolls_by_lines(qtbot: QtBot) -> None:
    chat = long_chat(qtbot)
    bar = chat.list.verticalScrollBar()
    assert bar.singleStep() == 36
    assert bar.pageStep() == max(36, chat.list.viewport().height() - 48)
