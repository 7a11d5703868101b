"""Reading one message in its own window: a reply shown as formatted text, anything else as
typed, and the title saying whose message it is."""

from __future__ import annotations

from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from treechat.ui.chat.message_reader import MessageReader
from treechat.ui.chat.model import ChatRow, RowKind


def test_a_reply_is_formatted_and_a_question_is_shown_as_typed(qtbot: QtBot) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    reader = MessageReader(parent)
    reader.show_row(ChatRow(RowKind.ASSISTANT, "a", text="**Bold** move", model="o3"))
    assert reader.windowTitle() == "o3 — select and copy any part"
    assert reader.browser.toPlainText() == "Bold move" and reader.isVisible()
    reader.show_row(ChatRow(RowKind.USER, "u", text="**as typed**"))
    assert reader.windowTitle() == "Your message — select and copy any part"
    assert reader.browser.toPlainText() == "**as typed**"
    assert not reader.isModal()
