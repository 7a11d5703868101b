"""The replies side by side: a column per model with its figures, columns that scroll together,
what only one reply says tinted, Continue and Fuse as signals the controller acts on."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QTextCursor
from PySide6.QtTest import QSignalSpy, QTest
from PySide6.QtWidgets import QWidget
from pytestqt.qtbot import QtBot

from treechat.ui.chat.compare_view import Column, CompareView, facts_text

LONG = "\n\n".join(f"Paragraph {i} about shared caching ideas." for i in range(60))


def make(qtbot: QtBot) -> CompareView:
    view = CompareView()
    qtbot.addWidget(view)
    view.resize(1100, 600)
    view.show()
    qtbot.waitExposed(view)
    return view


def test_a_column_per_reply_with_its_model_and_figures(qtbot: QtBot) -> None:
    view = make(qtbot)
    view.set_message("Which wood?")
    view.show_columns([
        Column("n1", "Mini", "Use **maple**.", facts_text(0.00123, True, 0.42)),
        Column("n2", "Local", "Use birch.", facts_text(None, False, 1.5, local=True)),
        Column("n3", "Odd", "Use cedar.", facts_text(0.0, False, None)),
    ])
    assert view.message.text() == "Replies to: Which wood?"
    assert [c.title.text() for c in view.columns] == ["Mini", "Local", "Odd"]
    assert [c.facts.text() for c in view.columns] == [
        "$0.0012 · first token 0.4 s", "free · first token 1.5 s", "unpriced"]
    assert view.columns[0].body.toPlainText() == "Use maple."  # markdown, not its syntax


def test_streaming_columns_fill_and_cannot_be_continued_or_fused_yet(qtbot: QtBot) -> None:
    view = make(qtbot)
    view.set_fuse_models([("m/a", "A"), ("m/b", "B")], "m/b", "Fuse them.")
    view.show_columns([Column("", "A", state="streaming"), Column("", "B", state="streaming")])
    view.set_running(True)
    view.append(0, "Hel")
    view.append(0, "lo")
    view.append(1, "World")
    qtbot.waitUntil(lambda: [c.body.toPlainText() for c in view.columns] == ["Hello", "World"])
    assert all("writing" in c.facts.text() for c in view.columns)
    assert not any(c.pick.isEnabled() for c in view.columns)
    assert not view.fuse_button.isEnabled()
    view.set_running(False)
    view.show_columns([Column("a1", "A", "Hello"), Column("b1", "B", "World")])
    assert all(c.pick.isEnabled() for c in view.columns) and view.fuse_button.isEnabled()

    picked = QSignalSpy(view.continueRequested)
    QTest.mouseClick(view.columns[1].pick, Qt.MouseButton.LeftButton)
    assert picked.count() == 1 and picked.at(0) == ["b1"]
    fused = QSignalSpy(view.fuseRequested)
    assert view.fuse_model.currentData() == "m/b"
    QTest.mouseClick(view.fuse_button, Qt.MouseButton.LeftButton)
    assert fused.at(0) == ["m/b", "Fuse them."]


def test_an_edited_instruction_is_kept_when_the_models_are_listed_again(qtbot: QtBot) -> None:
    view = make(qtbot)
    view.set_fuse_models([("m/a", "A")], None, "Default.")
    view.edit_instruction.setChecked(True)
    assert view.instruction.isVisible()
    view.instruction.moveCursor(QTextCursor.MoveOperation.End)
    QTest.keyClicks(view.instruction, " Mine.")
    view.set_fuse_models([("m/a", "A")], None, "Default.")
    assert view.instruction.toPlainText() == "Default. Mine."


def test_the_columns_scroll_together(qtbot: QtBot) -> None:
    view = make(qtbot)
    view.show_columns([Column("a", "A", LONG), Column("b", "B", LONG + "\n\n" + LONG)])
    first, second = (c.body.verticalScrollBar() for c in view.columns)
    assert first.maximum() > 0 and second.maximum() > first.maximum()
    first.setValue(first.maximum() // 2)
    assert abs(second.value() - second.maximum() // 2) <= 2
    second.setValue(second.maximum())
    assert first.value() == first.maximum()


def test_what_only_one_reply_says_is_tinted(qtbot: QtBot) -> None:
    view = make(qtbot)
    view.show_columns([
        Column("a", "A", "Cache the results in memory.\n\nMeasure first."),
        Column("b", "B", "Cache the results in memory.\n\nRewrite it in Rust."),
    ])
    assert [c.marked() for c in view.columns] == [[False, True], [False, True]]
    view.differences.setChecked(False)
    assert [c.marked() for c in view.columns] == [[False, False], [False, False]]


def test_the_controls_stand_apart(qtbot: QtBot) -> None:
    """Show differences and One at a time, and the fuse row's controls, do not touch."""
    view = make(qtbot)
    view.set_fuse_models([("m", "Mini")], "m", "Combine.")
    qtbot.wait(10)

    def gap(left: QWidget, right: QWidget) -> int:
        return right.geometry().left() - left.geometry().right()

    assert gap(view.differences, view.back) >= 8
    assert gap(view.fuse_model, view.edit_instruction) >= 6
    assert gap(view.edit_instruction, view.fuse_button) >= 6
