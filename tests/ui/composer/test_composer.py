"""The composer as a person uses it: Enter sends, Shift+Enter breaks the line, commands are
not sent, nothing typed is lost while a reply runs or after a failure, the model picker."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtTest import QSignalSpy, QTest
from pytestqt.qtbot import QtBot

from treechat.services.models.catalog import ModelChoice
from treechat.ui.composer.composer import Composer
from treechat.ui.composer.input import MAX_LINES


def make(qtbot: QtBot) -> Composer:
    composer = Composer()
    qtbot.addWidget(composer)
    composer.resize(700, 160)
    composer.show()
    composer.focus_input()
    return composer


def test_enter_sends_shift_enter_breaks_the_line(qtbot: QtBot) -> None:
    composer = make(qtbot)
    sent = QSignalSpy(composer.sendRequested)
    QTest.keyClicks(composer.input, "first line")
    QTest.keyClick(composer.input, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    QTest.keyClicks(composer.input, "second line")
    assert composer.text() == "first line\nsecond line"
    assert sent.count() == 0
    QTest.keyClick(composer.input, Qt.Key.Key_Return)
    assert sent.count() == 1 and sent.at(0) == ["first line\nsecond line"]
    # the field is emptied by whoever accepts the message, not by pressing Enter
    assert composer.text() == "first line\nsecond line"
    composer.clear_if("first line\nsecond line")
    assert composer.text() == ""


def test_blank_text_is_not_sent_and_send_is_disabled(qtbot: QtBot) -> None:
    composer = make(qtbot)
    sent = QSignalSpy(composer.sendRequested)
    assert not composer.send_button.isEnabled()
    QTest.keyClicks(composer.input, "   ")
    QTest.keyClick(composer.input, Qt.Key.Key_Return)
    assert sent.count() == 0 and not composer.send_button.isEnabled()
    QTest.keyClicks(composer.input, "x")
    assert composer.send_button.isEnabled()
    QTest.mouseClick(composer.send_button, Qt.MouseButton.LeftButton)
    assert sent.count() == 1


def test_slash_commands_are_commands(qtbot: QtBot) -> None:
    composer = make(qtbot)
    sent = QSignalSpy(composer.sendRequested)
    commands = QSignalSpy(composer.commandRequested)
    for text in ("/context", "/COMPACT "):
        QTest.keyClicks(composer.input, text)
        QTest.keyClick(composer.input, Qt.Key.Key_Return)
        assert composer.text() == ""
    assert [commands.at(i) for i in range(commands.count())] == [["context"], ["compact"]]
    assert sent.count() == 0
    QTest.keyClicks(composer.input, "/contextual thinking")  # not a command
    QTest.keyClick(composer.input, Qt.Key.Key_Return)
    assert sent.count() == 1


def test_while_running_enter_keeps_the_text_and_stop_stops(qtbot: QtBot) -> None:
    composer = make(qtbot)
    sent = QSignalSpy(composer.sendRequested)
    stops = QSignalSpy(composer.stopRequested)
    composer.set_running(True)
    assert composer.send_button.text() == "Stop"
    assert composer.send_button.accessibleName() == "Stop"
    QTest.keyClicks(composer.input, "next question")
    QTest.keyClick(composer.input, Qt.Key.Key_Return)
    assert sent.count() == 0 and composer.text() == "next question"
    QTest.keyClick(composer.input, Qt.Key.Key_Escape)
    QTest.mouseClick(composer.send_button, Qt.MouseButton.LeftButton)
    assert stops.count() == 2
    composer.set_running(False)
    assert composer.send_button.text() == "Send"
    QTest.keyClick(composer.input, Qt.Key.Key_Return)
    assert sent.count() == 1


def test_restore_never_overwrites_new_typing(qtbot: QtBot) -> None:
    composer = make(qtbot)
    composer.restore("my long message")
    assert composer.text() == "my long message"
    composer.restore("my long message")  # already there: not doubled
    assert composer.text() == "my long message"
    composer.set_text("something new")
    composer.restore("my long message")
    assert composer.text() == "my long message\n\nsomething new"


def test_the_field_grows_then_scrolls(qtbot: QtBot) -> None:
    composer = make(qtbot)
    one = composer.input.height()
    composer.set_text("a\nb\nc")
    three = composer.input.height()
    assert three > one
    composer.set_text("\n".join(str(i) for i in range(40)))
    tall = composer.input.height()
    composer.set_text("\n".join(str(i) for i in range(80)))
    assert composer.input.height() == tall  # capped at MAX_LINES
    assert tall < one * (MAX_LINES + 1)


def test_model_picker(qtbot: QtBot) -> None:
    composer = make(qtbot)
    changed = QSignalSpy(composer.modelChanged)
    choices = [
        ModelChoice("local/small", "Small, offline", "local", local=True),
        ModelChoice("openai/gpt-4o", "GPT-4o", "openai"),
        ModelChoice("anthropic/claude", "Claude", "anthropic", available=False),
    ]
    composer.set_models(choices, "openai/gpt-4o")
    assert composer.current_model() == "openai/gpt-4o"
    assert composer.picker.currentText() == "GPT-4o"
    assert changed.count() == 0  # filling the picker is not a choice
    assert not composer.models.item(2).isEnabled()
    composer.picker.setCurrentIndex(0)
    assert changed.count() == 1 and changed.at(0) == ["local/small"]
    composer.set_models(choices, "mistral/gone")
    assert composer.picker.currentText() == "mistral/gone (not available)"
    assert composer.picker.accessibleName() == "Model"
    assert composer.input.accessibleName() == "Message"
    assert composer.ring.accessibleName() == "Context usage"


def test_the_picker_says_what_it_is_waiting_for(qtbot: QtBot) -> None:
    composer = make(qtbot)
    assert composer.picker.placeholderText() == "Models…"  # before the list arrives
    composer.set_models([], None)
    assert composer.picker.currentIndex() == -1
    assert composer.picker.placeholderText() == "No models"
    composer.set_models([ModelChoice("openai/gpt-4o", "GPT-4o", "openai")], None)
    assert composer.picker.placeholderText() == "Choose a model"
