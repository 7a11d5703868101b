"""Sending to several models at once: the button beside the model picker says how many the next
message goes to, and its popup lists the models to tick, the saved sets ("my three") to choose
from, and a name to save the ticked ones under."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from PySide6.QtCore import QPoint, Qt, Signal
from PySide6.QtGui import QHideEvent
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

MODEL_ROLE = Qt.ItemDataRole.UserRole + 1
NO_SET = "Saved sets…"


class ModelSetPopup(QFrame):
    """The models to tick, the saved sets and saving the ticked ones under a name."""

    applied = Signal(list)  # the ticked models, in the picker's order
    saveRequested = Signal(str, list)
    deleteRequested = Signal(str)

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent, Qt.WindowType.Popup)
        self.setObjectName("ModelSetPopup")
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setAccessibleName("Ask several models")
        self._sets: dict[str, tuple[str, ...]] = {}
        self._return_to: QWidget | None = None  # where the keyboard was before it opened
        heading = QLabel("Ask several models at once")
        font = heading.font()
        font.setBold(True)
        heading.setFont(font)
        self.saved = QComboBox()
        self.saved.setAccessibleName("Saved sets of models")
        self.saved.activated.connect(self._set_chosen)
        self.delete_button = QPushButton("Delete set")
        self.delete_button.clicked.connect(lambda _checked=False: self._delete())
        saved_row = QHBoxLayout()
        saved_row.addWidget(self.saved, 1)
        saved_row.addWidget(self.delete_button)
        self.list = QListWidget()
        self.list.setAccessibleName("Models to ask")
        self.list.itemChanged.connect(lambda _item: self._update())
        self.name = QLineEdit()
        self.name.setPlaceholderText("Name these, e.g. my three")
        self.name.setAccessibleName("Name of the set")
        self.name.textChanged.connect(lambda _t: self._update())
        self.name.returnPressed.connect(self._save)
        self.save_button = QPushButton("Save set")
        self.save_button.clicked.connect(lambda _checked=False: self._save())
        name_row = QHBoxLayout()
        name_row.addWidget(self.name, 1)
        name_row.addWidget(self.save_button)
        self.one_button = QPushButton("One model")
        self.one_button.setToolTip("Send to the picker's model only")
        self.one_button.clicked.connect(lambda _checked=False: self._apply([]))
        self.use_button = QPushButton("Ask these")
        self.use_button.setDefault(True)
        self.use_button.clicked.connect(lambda _checked=False: self._apply(self.ticked()))
        buttons = QHBoxLayout()
        buttons.addStretch(1)
        buttons.addWidget(self.one_button)
        buttons.addWidget(self.use_button)
        box = QVBoxLayout(self)
        box.setContentsMargins(8, 8, 8, 8)
        box.setSpacing(6)
        box.addWidget(heading)
        box.addLayout(saved_row)
        box.addWidget(self.list, 1)
        self.too_few = QLabel("Only one model can be asked now: add a connection or start a "
                              "local server to ask several at once.")
        self.too_few.setObjectName("EmptyHint")
        self.too_few.setWordWrap(True)
        box.addWidget(self.too_few)
        box.addLayout(name_row)
        box.addLayout(buttons)

    def fill(self, choices: Sequence[tuple[str, str, bool]], ticked: Sequence[str],
             sets: Mapping[str, tuple[str, ...]]) -> None:
        """`choices` are (model id, name, available), in the picker's order."""
        self.list.blockSignals(True)
        self.list.clear()
        wanted = set(ticked)
        for model_id, label, available in choices:
            item = QListWidgetItem(label)
            item.setData(MODEL_ROLE, model_id)
            item.setToolTip(model_id)
            flags = Qt.ItemFlag.ItemIsUserCheckable
            if available:
                flags |= Qt.ItemFlag.ItemIsEnabled
            item.setFlags(flags)
            item.setCheckState(Qt.CheckState.Checked if model_id in wanted
                               else Qt.CheckState.Unchecked)
            self.list.addItem(item)
        self.list.blockSignals(False)
        self.show_sets(sets)

    def show_sets(self, sets: Mapping[str, tuple[str, ...]]) -> None:
        self._sets = dict(sets)
        self.saved.clear()
        self.saved.addItem(NO_SET)
        for name, models in sorted(self._sets.items()):
            self.saved.addItem(f"{name} ({len(models)})", name)
        self.saved.setEnabled(bool(self._sets))
        self._update()

    def ticked(self) -> list[str]:
        return [str(self.list.item(i).data(MODEL_ROLE)) for i in range(self.list.count())
                if self.list.item(i).checkState() == Qt.CheckState.Checked]

    def tick(self, models: Sequence[str]) -> None:
        wanted = set(models)
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.flags() & Qt.ItemFlag.ItemIsEnabled:
                item.setCheckState(Qt.CheckState.Checked if item.data(MODEL_ROLE) in wanted
                                   else Qt.CheckState.Unchecked)

    def _set_chosen(self, row: int) -> None:
        name = self.saved.itemData(row)
        if name in self._sets:
            self.tick(self._sets[name])
            self.name.setText(str(name))

    def _save(self) -> None:
        name = " ".join(self.name.text().split())
        if name and len(self.ticked()) >= 2:
            self.saveRequested.emit(name, self.ticked())

    def _delete(self) -> None:
        name = self.saved.currentData()
        if name:
            self.deleteRequested.emit(str(name))

    def _apply(self, models: list[str]) -> None:
        self.hide()
        self.applied.emit(models)

    def remember_focus(self, home: QWidget | None = None) -> None:
        """Give the keyboard back, when the popup closes, to `home` (the message box), else
        to the widget that has it now."""
        widget = home or QApplication.focusWidget()
        self._return_to = widget if widget is not None and widget is not self else None

    def hideEvent(self, event: QHideEvent) -> None:
        super().hideEvent(event)
        back, self._return_to = self._return_to, None
        try:
            if back is not None and back.isVisible():
                back.setFocus(Qt.FocusReason.PopupFocusReason)
        except RuntimeError:  # the widget was deleted while the popup was open
            pass

    def _update(self) -> None:
        usable = sum(1 for i in range(self.list.count())
                     if self.list.item(i).flags() & Qt.ItemFlag.ItemIsEnabled)
        self.too_few.setVisible(usable < 2)
        n = len(self.ticked())
        self.use_button.setText(f"Ask these {n}" if n >= 2 else "Ask these")
        self.use_button.setEnabled(n >= 2)
        self.save_button.setEnabled(n >= 2 and bool(self.name.text().strip()))
        self.delete_button.setEnabled(bool(self.saved.currentData()))


class ModelSetButton(QToolButton):
    """Beside the picker while two or more models are chosen: how many, and a click opens
    the popup to change them."""

    chosenChanged = Signal(list)  # the models the next message goes to ([]: the picker's)
    saveRequested = Signal(str, list)
    deleteRequested = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ModelSetButton")
        self.setAccessibleName("Ask several models")
        self.popup = ModelSetPopup(self)
        self.popup.applied.connect(self.set_chosen)
        self.popup.saveRequested.connect(self.saveRequested)
        self.popup.deleteRequested.connect(self.deleteRequested)
        self.clicked.connect(lambda _checked=False: self.open_popup())
        self._choices: list[tuple[str, str, bool]] = []
        self._sets: dict[str, tuple[str, ...]] = {}
        self._chosen: list[str] = []
        # where the keyboard goes when the popup closes: the message box, never the picker
        # it was opened from (typing there would search models instead of writing)
        self.focus_home: QWidget | None = None
        self._show()

    def set_choices(self, choices: Sequence[tuple[str, str, bool]]) -> None:
        self._choices = list(choices)
        known = {c[0] for c in self._choices}
        if any(m not in known for m in self._chosen) and self._choices:
            self.set_chosen([m for m in self._chosen if m in known])
        else:
            self._show()

    def set_sets(self, sets: Mapping[str, tuple[str, ...]]) -> None:
        self._sets = dict(sets)
        self.popup.show_sets(self._sets)

    def chosen(self) -> list[str]:
        """The models the next message goes to: two or more, or none (the picker's one)."""
        return list(self._chosen)

    def set_chosen(self, models: list[str]) -> None:
        chosen = list(dict.fromkeys(models)) if len(set(models)) >= 2 else []
        changed = chosen != self._chosen
        self._chosen = chosen
        self._show()
        if changed:
            self.chosenChanged.emit(list(chosen))

    def open_popup(self, anchor: QWidget | None = None) -> None:
        """Open the popup above `anchor` (default: this button; the picker when the button
        is hidden), below it when there is no room above."""
        popup = self.popup
        popup.remember_focus(self.focus_home)
        popup.fill(self._choices, self._chosen, self._sets)
        near = anchor or self
        popup.resize(max(320, near.width()), 360)
        top = near.mapToGlobal(QPoint(0, -popup.height()))
        popup.move(top if top.y() >= 0 else near.mapToGlobal(QPoint(0, near.height())))
        popup.show()
        popup.list.setFocus(Qt.FocusReason.PopupFocusReason)

    def _label(self, model: str) -> str:
        return next((c[1] for c in self._choices if c[0] == model), model)

    def _show(self) -> None:
        # Shown only while several are chosen: the picker's Several… opens the popup, and
        # the message box keeps its room when one model is all it uses.
        self.setVisible(bool(self._chosen))
        if self._chosen:
            self.setText(f"{len(self._chosen)} models")
            self.setToolTip("The next message goes to: " + ", ".join(
                self._label(m) for m in self._chosen))
        else:
            self.setText("Several…")
            self.setToolTip("Send the next message to several models at once")
