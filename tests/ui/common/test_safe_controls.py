"""Controls a stray key or a passing wheel cannot work: Enter never presses a guarded
button, a destructive action asks first with Cancel the default, and an unfocused combo
box ignores the wheel."""

from __future__ import annotations

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QComboBox, QMessageBox, QPushButton, QWidget
from pytestqt.qtbot import QtBot

from treechat.ui.common.safe_controls import ask_before, guard_wheel, never_default


def test_enter_presses_no_guarded_button(qtbot: QtBot) -> None:
    buttons = [QPushButton("Delete"), QPushButton("Reset")]
    buttons[0].setDefault(True)
    never_default(buttons)
    assert not any(b.isDefault() or b.autoDefault() for b in buttons)


def test_a_destructive_action_runs_only_on_its_own_button(qtbot: QtBot) -> None:
    parent = QWidget()
    qtbot.addWidget(parent)
    done: list[str] = []
    box = ask_before(parent, "Delete chat", "Delete “Cats”?", "Delete",
                     lambda: done.append("deleted"), detail="It cannot be undone.")
    cancel = box.button(QMessageBox.StandardButton.Cancel)
    assert box.defaultButton() is cancel and box.escapeButton() is cancel
    assert box.informativeText() == "It cannot be undone."
    cancel.click()
    assert done == []
    again = ask_before(parent, "Delete chat", "Delete “Cats”?", "Delete",
                       lambda: done.append("deleted"))
    (yes,) = [b for b in again.buttons() if b.text() == "Delete"]
    yes.click()
    assert done == ["deleted"]


def test_a_passing_wheel_changes_no_unfocused_combo_box(qtbot: QtBot) -> None:
    root = QWidget()
    qtbot.addWidget(root)
    combo = QComboBox(root)
    combo.addItems(["one", "two", "three"])
    guard_wheel(root)
    root.show()
    wheel = QWheelEvent(QPointF(5, 5), QPointF(5, 5), QPoint(0, 0), QPoint(0, -120),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier,
                        Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(combo, wheel)
    assert combo.currentIndex() == 0
    assert combo.focusPolicy() != Qt.FocusPolicy.WheelFocus
