"""Editing a sent message in place: Enter sends the new version, Shift+Enter is a new line,
Esc cancels, and nothing is sent while a reply runs or when the text is empty."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from pytestqt.qtbot import QtBot

from treechat.ui.chat.message_editor import MessageEditor


def make(qtbot: QtBot, text: str = "Name a colour") -> tuple[MessageEditor, list[str],
                                                              list[bool]]:
    editor = MessageEditor(text)
    qtbot.addWidget(editor)
    editor.show()
    sent: list[str] = []
    cancelled: list[bool] = []
    editor.submitted.connect(sent.append)
    editor.cancelled.connect(lambda: cancelled.append(True))
    return editor, sent, cancelled


def test_enter_sends_and_shift_enter_is_a_new_line(qtbot: QtBot) -> None:
    editor, sent, _ = make(qtbot)
    QTest.keyClick(editor.text_edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(editor.text_edit, "in French")
    assert sent == []
    QTest.keyClick(editor.text_edit, Qt.Key.Key_Return)
    assert sent == ["Name a colour\nin French"]  # typing went on where the text ended


def test_esc_cancels_and_nothing_is_sent_while_busy_or_empty(qtbot: QtBot) -> None:
    editor, sent, cancelled = make(qtbot)
    editor.set_busy(True)
    assert not editor.send_button.isEnabled()
    QTest.keyClick(editor.text_edit, Qt.Key.Key_Return)
    assert sent == []
    editor.set_busy(False)
    editor.set_text("   ")
    assert not editor.send_button.isEnabled()
    editor.send_button.click()
    assert sent == []
    QTest.keyClick(editor.text_edit, Qt.Key.Key_Escape)
    assert cancelled == [True]


def test_it_grows_with_its_text_up_to_a_limit(qtbot: QtBot) -> None:
    editor, _, _ = make(qtbot, "one line")
    short = editor.wanted_height()
    editor.set_text("\n".join(f"line {i}" for i in range(8)))
    taller = editor.wanted_height()
    editor.set_text("\n".join(f"line {i}" for i in range(80)))
    capped = editor.wanted_height()
    editor.set_text("\n".join(f"line {i}" for i in range(200)))
    assert short < taller < capped == editor.wanted_height()  # it scrolls past a dozen lines
