"""The model picker: a combo box whose popup lists the models grouped by connection, each
with its window and its price per million input / output tokens ("unpriced" when litellm
has none), the connection marked detected or unreachable, a search field that filters as
one types (typing on the closed picker opens it with those letters) and a Refresh button.

The combo's own model keeps one row per model (the rows `Composer` fills), so selecting and
reading the current model work as on any combo box; the popup is only a way to choose."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QPoint, QRectF, QSize, Qt, QTimer, Signal
from PySide6.QtGui import QColor, QIcon, QPainter, QPixmap
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QPushButton,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QTreeWidget,
    QTreeWidgetItem,
    QTreeWidgetItemIterator,
    QVBoxLayout,
    QWidget,
)
from shiboken6 import isValid

from ...core.money import FREE, UNPRICED
from ..common.icons import draw_icon
from ..common.theme import colors_of

if TYPE_CHECKING:
    from PySide6.QtGui import QHideEvent, QKeyEvent, QPaintEvent

    from ...services.models.catalog import ModelChoice

CURRENT_ROLE = Qt.ItemDataRole.UserRole + 5  # True on the model the chat uses now
GROUP_ROLE = Qt.ItemDataRole.UserRole + 2  # the connection's heading in the popup
DETAIL_ROLE = Qt.ItemDataRole.UserRole + 3  # "128K · $3.00 / $15.00 per M" or "… · unpriced"
ROW_ROLE = Qt.ItemDataRole.UserRole + 4  # a popup item's row in the combo's model

STATE_MARKS = {
    "detected": "detected",
    "unreachable": "unreachable",
    "unchecked": "not checked yet",
    "needs-key": "needs a key",
}


def tokens_text(n: int) -> str:
    """A window as people say it: 32,768 and 32,000 are both "32K", 1,048,576 "1M"."""
    for unit, binary, decimal in (("M", 1 << 20, 1_000_000), ("K", 1 << 10, 1000)):
        if n >= decimal:
            if n % decimal == 0:
                return f"{n // decimal}{unit}"
            if n % binary == 0:
                return f"{n // binary}{unit}"
            return f"{n / decimal:.3g}{unit}"
    return str(n)


def price_text(price_in: float | None, price_out: float | None, local: bool = False) -> str:
    """The price per million tokens; "free" for a model on this machine, "unpriced" for a
    hosted one litellm has no price for."""
    if local:
        return FREE
    if price_in is None or price_out is None:
        return UNPRICED
    return f"${price_in:.2f} / ${price_out:.2f} per M"


def detail_text(choice: ModelChoice) -> str:
    """What the popup says beside a model: its window and its price."""
    parts = []
    if choice.window:
        window = tokens_text(choice.window)
        parts.append(f"~{window} (estimated)" if choice.window_estimated else window)
    parts.append(price_text(choice.price_in, choice.price_out, choice.local))
    return " · ".join(parts)


def group_text(choice: ModelChoice) -> str:
    """The heading of a model's connection, with its state when it is not plainly ready."""
    label = choice.connection_label or "Configured"
    mark = STATE_MARKS.get(choice.state)
    return f"{label} ({mark})" if mark else label


class ModelPickerPopup(QFrame):
    chosen = Signal(int)  # a row of the combo's model
    refreshRequested = Signal()
    severalRequested = Signal()
    dismissed = Signal()  # closed with nothing chosen (Esc, a click elsewhere)

    def __init__(self, picker: ModelPicker) -> None:
        super().__init__(picker, Qt.WindowType.Popup)
        self.setObjectName("ModelPickerPopup")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Models")
        self._picker = picker
        self.groups = 0
        self._leaving = False  # hidden because a model or "Several…" was chosen
        self.search = QLineEdit()
        self.search.setPlaceholderText("Search models")
        self.search.setAccessibleName("Search models")
        self.search.setClearButtonEnabled(True)
        self.search.textChanged.connect(self._filter)
        self.search.returnPressed.connect(self._choose_first)
        self.search.installEventFilter(self)
        self.tree = QTreeWidget()
        self.tree.setAccessibleName("Models by connection")
        self.tree.setColumnCount(2)
        self.tree.setHeaderHidden(True)
        self.tree.setRootIsDecorated(False)
        self.tree.setIndentation(10)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        header.setSectionResizeMode(1, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemActivated.connect(self._activated)
        self.tree.itemClicked.connect(self._activated)
        # Like a menu, the row under the pointer is the one Enter would choose; the model in
        # use keeps its check mark.
        self.tree.setMouseTracking(True)
        self.tree.itemEntered.connect(self._entered)
        self.empty = QLabel("No model matches")
        self.empty.setObjectName("DialogMuted")
        self.empty.hide()
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.setAccessibleName("Refresh models")
        self.refresh_button.setToolTip("List every connection's models again and look for "
                                       "servers on this machine")
        self.refresh_button.clicked.connect(self.refreshRequested)
        top = QHBoxLayout()
        top.setContentsMargins(0, 0, 0, 0)
        top.addWidget(self.search, 1)
        top.addWidget(self.refresh_button)
        self.several_button = QPushButton("Several…")
        self.several_button.setToolTip("Send the next message to several models at once")
        self.several_button.clicked.connect(lambda _checked=False: self._several())
        top.addWidget(self.several_button)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(6, 6, 6, 6)
        layout.setSpacing(4)
        layout.addLayout(top)
        layout.addWidget(self.tree, 1)
        layout.addWidget(self.empty)

    def fill(self) -> None:
        """Rebuild the tree from the combo's rows, grouped by connection, in their order."""
        model = self._picker.model()
        current = self._picker.currentIndex()
        self.tree.clear()
        check, blank = self._marks()
        groups: dict[str, QTreeWidgetItem] = {}
        selected: QTreeWidgetItem | None = None
        for row in range(model.rowCount()):
            index = model.index(row, 0)
            heading = str(index.data(GROUP_ROLE) or "Other")
            group = groups.get(heading)
            if group is None:
                group = QTreeWidgetItem(self.tree, [heading, ""])
                group.setFlags(Qt.ItemFlag.ItemIsEnabled)
                font = group.font(0)
                font.setBold(True)
                group.setFont(0, font)
                group.setFirstColumnSpanned(True)
                groups[heading] = group
            name = str(index.data(Qt.ItemDataRole.DisplayRole) or "")
            short = name.split(" · ", 1)[1] if " · " in name else name
            item = QTreeWidgetItem(group, [short, str(index.data(DETAIL_ROLE) or "")])
            item.setData(0, ROW_ROLE, row)
            item.setData(0, Qt.ItemDataRole.AccessibleTextRole, name)
            item.setToolTip(0, str(index.data(Qt.ItemDataRole.ToolTipRole) or name))
            item.setTextAlignment(1, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            if not model.flags(index) & Qt.ItemFlag.ItemIsEnabled:
                item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled)
            item.setIcon(0, check if row == current else blank)
            if row == current:
                selected = item
                item.setData(0, CURRENT_ROLE, True)
                font = item.font(0)
                font.setBold(True)
                item.setFont(0, font)
                item.setData(0, Qt.ItemDataRole.AccessibleTextRole, f"{name}, current")
        self.tree.expandAll()
        self.groups = len(groups)
        if selected is not None:
            self.tree.setCurrentItem(selected)
        self._filter(self.search.text())

    def _marks(self) -> tuple[QIcon, QIcon]:
        """The check mark of the model in use (accent, or the accent's text colour on a
        selected row) and a blank of its size for the others, so names line up."""
        side = max(12, min(16, self.fontMetrics().height() - 2))
        self.tree.setIconSize(QSize(side, side))
        ratio = self.devicePixelRatioF()
        colors = colors_of(self.palette())

        def picture(color: str | None) -> QPixmap:
            pixmap = QPixmap(int(side * ratio), int(side * ratio))
            pixmap.setDevicePixelRatio(ratio)
            pixmap.fill(Qt.GlobalColor.transparent)
            if color is not None:
                painter = QPainter(pixmap)
                draw_icon(painter, "check", QRectF(0, 0, side, side), QColor(color))
                painter.end()
            return pixmap

        check = QIcon(picture(colors.accent))
        check.addPixmap(picture(colors.accent_text), QIcon.Mode.Selected)
        return check, QIcon(picture(None))

    def _several(self) -> None:
        self._leaving = True
        self.hide()
        self.severalRequested.emit()

    def _entered(self, item: QTreeWidgetItem, _column: int) -> None:
        if item.parent() is not None and not item.isDisabled():
            self.tree.setCurrentItem(item)

    def current_model_item(self) -> QTreeWidgetItem | None:
        """The entry of the model in use (marked with a check), if listed."""
        return next((i for i in self.items() if i.data(0, CURRENT_ROLE)), None)

    def items(self) -> list[QTreeWidgetItem]:
        """The model entries (not the headings), in order."""
        out = []
        it = QTreeWidgetItemIterator(self.tree)
        while it.value():
            item = it.value()
            if item.parent() is not None:
                out.append(item)
            it += 1
        return out

    def visible_items(self) -> list[QTreeWidgetItem]:
        return [i for i in self.items() if not i.isHidden()]

    def _filter(self, text: str) -> None:
        words = text.lower().split()
        shown = 0
        groups: dict[int, tuple[QTreeWidgetItem, bool]] = {}
        for item in self.items():
            group = item.parent()
            assert group is not None
            hay = f"{group.text(0)} {item.text(0)} {item.text(1)}".lower()
            match = all(w in hay for w in words)
            item.setHidden(not match)
            shown += match
            seen = groups.get(id(group), (group, False))
            groups[id(group)] = (group, seen[1] or match)
        for group, any_shown in groups.values():
            group.setHidden(not any_shown)
        self.empty.setVisible(shown == 0)
        current = self.tree.currentItem()
        if current is None or current.isHidden() or current.parent() is None:
            first = next((i for i in self.visible_items() if not i.isDisabled()), None)
            if first is not None:
                self.tree.setCurrentItem(first)

    def _choose_first(self) -> None:
        current = self.tree.currentItem()
        if current is not None and not current.isHidden() and current.parent() is not None:
            self._activated(current)
            return
        first = next((i for i in self.visible_items() if not i.isDisabled()), None)
        if first is not None:
            self._activated(first)

    def _activated(self, item: QTreeWidgetItem, _column: int = 0) -> None:
        row = item.data(0, ROW_ROLE)
        if row is None or item.isDisabled():
            return
        self._leaving = True
        self.hide()
        self.chosen.emit(int(row))

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        self.search.clear()  # the next opening starts with every model shown
        if not self._leaving:
            self.dismissed.emit()
        self._leaving = False

    def eventFilter(self, watched: object, event: object) -> bool:
        from PySide6.QtCore import QEvent
        from PySide6.QtGui import QKeyEvent

        if watched is self.search and isinstance(event, QKeyEvent) and (
            event.type() == QEvent.Type.KeyPress
        ):
            key = event.key()
            if key in (Qt.Key.Key_Down, Qt.Key.Key_Up):
                visible = [i for i in self.visible_items() if not i.isDisabled()]
                if visible:
                    current = self.tree.currentItem()
                    at = visible.index(current) if current in visible else -1
                    step = 1 if key == Qt.Key.Key_Down else -1
                    self.tree.setCurrentItem(visible[max(0, min(len(visible) - 1, at + step))])
                return True
        return False


PICKER_MIN_CHARS = 14  # how narrow the picker may get, in average characters


class ModelPicker(QComboBox):
    """The combo box in the composer; its popup is `ModelPickerPopup`. It asks for the room
    its longest name needs but makes do with less: the name then ends in an ellipsis, never
    cut mid-letter, and the window is never widened for it."""

    refreshRequested = Signal()
    severalRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.popup = ModelPickerPopup(self)
        self.popup.chosen.connect(self._chosen)
        self.popup.refreshRequested.connect(self.refreshRequested)
        self.popup.severalRequested.connect(self.severalRequested)
        self.popup.dismissed.connect(self._give_back_keyboard)
        # where the person was typing before the picker took the keyboard (the message box)
        self._typing_in: QWidget | None = None
        app = QApplication.instance()
        if isinstance(app, QApplication):
            app.focusChanged.connect(self._focus_moved)

    def _focus_moved(self, old: QWidget | None, now: QWidget | None) -> None:
        popup = self.popup
        if now is self and old is not None and old is not popup and not popup.isAncestorOf(old):
            self._typing_in = old
        elif now is not None and not popup.isVisible() and popup.isAncestorOf(now):
            # the closed popup's window activated again after it hid (the window system's
            # late word): a field nobody sees must not take what is typed
            self._give_back_keyboard()

    def _give_back_keyboard(self) -> None:
        """After a choice, or the popup closed with none, the keyboard goes back to where
        the person was typing before the picker took it, so what they type next is not a
        search in a popup that reopens. Deferred: Qt hands the focus back to the picker as
        its popup closes."""
        QTimer.singleShot(0, self._refocus)

    def _refocus(self) -> None:
        if not isValid(self):
            return
        target = self._typing_in
        if target is None or not isValid(target) or not target.isVisible() \
                or not target.isEnabled() or target.window() is not self.window():
            target = self if self.isVisible() else None
        if target is None or self.popup.isVisible():
            return
        if QApplication.activeWindow() is not target.window():
            target.window().activateWindow()
        target.setFocus(Qt.FocusReason.PopupFocusReason)

    def sizeHint(self) -> QSize:
        # room for the current name whole (Qt's own hint can lag behind the style's font)
        hint = super().sizeHint()
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        metrics = self.fontMetrics()
        need = self.style().sizeFromContents(
            QStyle.ContentsType.CT_ComboBox, opt,
            QSize(metrics.horizontalAdvance(opt.currentText), metrics.height()), self)
        return QSize(max(hint.width(), need.width()), hint.height())

    def minimumSizeHint(self) -> QSize:
        full = super().minimumSizeHint()
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        metrics = self.fontMetrics()
        least = self.style().sizeFromContents(
            QStyle.ContentsType.CT_ComboBox, opt,
            QSize(metrics.averageCharWidth() * PICKER_MIN_CHARS, metrics.height()), self)
        return QSize(min(full.width(), least.width()), full.height())

    def shown_text(self) -> str:
        """The name as drawn: the current one, elided to the room the button has."""
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        room = self.style().subControlRect(QStyle.ComplexControl.CC_ComboBox, opt,
                                           QStyle.SubControl.SC_ComboBoxEditField, self)
        metrics = self.fontMetrics()
        if metrics.horizontalAdvance(opt.currentText) <= room.width():  # as Qt sizes it
            return opt.currentText
        return metrics.elidedText(opt.currentText, Qt.TextElideMode.ElideRight, room.width())

    def paintEvent(self, event: QPaintEvent) -> None:
        # QComboBox draws its text clipped at the arrow; this draws it elided instead.
        painter = QStylePainter(self)
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self.shown_text()
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)

    def showPopup(self) -> None:
        popup = self.popup
        popup.fill()
        rows = self.model().rowCount() + popup.groups
        row_height = max(18, popup.tree.sizeHintForRow(0)) if rows else 20
        width = max(self.width(), 460)
        height = max(160, min(460, 56 + row_height * (rows + 1)))
        popup.resize(width, height)
        below = self.mapToGlobal(QPoint(0, self.height()))
        above = self.mapToGlobal(QPoint(0, -height))
        screen = self.screen().availableGeometry() if self.screen() else None
        fits_below = screen is None or below.y() + height <= screen.bottom()
        popup.move(below if fits_below else above)
        popup.show()
        popup.search.setFocus(Qt.FocusReason.PopupFocusReason)

    def hidePopup(self) -> None:
        self.popup.hide()
        super().hidePopup()

    def set_refreshing(self, refreshing: bool) -> None:
        button = self.popup.refresh_button
        button.setEnabled(not refreshing)
        button.setText("Refreshing…" if refreshing else "Refresh")
        if not refreshing and self.popup.isVisible():
            self.popup.fill()

    def keyPressEvent(self, event: QKeyEvent) -> None:
        text = event.text()
        if text and text.isprintable() and not text.isspace():
            if self.popup.isVisible():  # keys that reach the picker while its popup is open
                self.popup.search.insert(text)
                return
            self.popup.search.setText(text)
            self.showPopup()
            self.popup.search.setCursorPosition(len(text))
            return
        super().keyPressEvent(event)

    def _chosen(self, row: int) -> None:
        self.setCurrentIndex(row)  # currentIndexChanged tells the composer
        self._give_back_keyboard()
