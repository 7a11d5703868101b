"""Controls a stray key or a passing wheel cannot work: buttons that Enter never presses
because focus happened to land on them, a confirmation whose default is Cancel before
anything is removed, and combo and spin boxes that let the wheel scroll the page under them
unless the person has clicked or tabbed into them."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QAbstractScrollArea,
    QAbstractSpinBox,
    QApplication,
    QComboBox,
    QMessageBox,
    QPushButton,
    QWidget,
)


def never_default(buttons: Iterable[QPushButton]) -> None:
    """Enter does not press these (a dialog otherwise makes a focused button its default)."""
    for button in buttons:
        button.setAutoDefault(False)
        button.setDefault(False)


def ask_before(
    parent: QWidget, title: str, text: str, action: str, then: Callable[[], None],
    detail: str = "",
) -> QMessageBox:
    """Ask "really?" before a destructive `action`; `then` runs only on its button. Cancel is
    the default and Esc, so Enter or Esc change nothing. Shown with `open`, never `exec`."""
    box = QMessageBox(parent)
    box.setIcon(QMessageBox.Icon.Warning)
    box.setWindowTitle(title)
    box.setText(text)
    if detail:
        box.setInformativeText(detail)
    yes = box.addButton(action, QMessageBox.ButtonRole.DestructiveRole)
    cancel = box.addButton(QMessageBox.StandardButton.Cancel)
    yes.setAutoDefault(False)
    box.setDefaultButton(cancel)
    box.setEscapeButton(cancel)
    box.setObjectName("ConfirmDestructive")

    def answered(clicked: object) -> None:
        if clicked is yes:
            then()

    box.buttonClicked.connect(answered)
    box.finished.connect(lambda _code: box.deleteLater())
    box.open()
    return box


class _WheelGuard(QObject):
    """An unfocused combo or spin box passes the wheel to the scroll area it sits in."""

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() != QEvent.Type.Wheel or not isinstance(watched, QWidget):
            return False
        if watched.hasFocus():
            return False  # the person is in it: the wheel steps it, as they expect
        area = _scroll_area_of(watched)
        if area is not None:
            QApplication.sendEvent(area.verticalScrollBar(), event)
        return True


_GUARD: _WheelGuard | None = None


def _scroll_area_of(widget: QWidget) -> QAbstractScrollArea | None:
    parent = widget.parentWidget()
    while parent is not None:
        if isinstance(parent, QAbstractScrollArea):
            return parent
        parent = parent.parentWidget()
    return None


def guard_wheel(root: QWidget) -> None:
    """Every combo and spin box under `root` (now) ignores the wheel until it has focus; a
    click or Tab gives it focus, the wheel never does."""
    global _GUARD
    if _GUARD is None:
        _GUARD = _WheelGuard(QApplication.instance())
    guarded: list[QWidget] = [*root.findChildren(QComboBox), *root.findChildren(QAbstractSpinBox)]
    if isinstance(root, (QComboBox, QAbstractSpinBox)):
        guarded.append(root)
    for widget in guarded:
        if widget.focusPolicy() == Qt.FocusPolicy.WheelFocus:
            widget.setFocusPolicy(Qt.FocusPolicy.StrongFocus)
        widget.removeEventFilter(_GUARD)
        widget.installEventFilter(_GUARD)
