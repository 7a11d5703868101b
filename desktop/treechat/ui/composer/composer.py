"""The composer at the bottom of the chat: a growing text field, the model picker, the
occupancy ring and a Send button that turns into Stop while a reply is written.

What is typed stays in the field until the window has taken it; `/context` and `/compact`
are commands, not messages."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (
    QComboBox,
    QFrame,
    QHBoxLayout,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from ..occupancy.ring import OccupancyRing
from .file_chips import PaperclipButton
from .hint import ComposerHint
from .input import ComposerInput
from .model_picker import DETAIL_ROLE, GROUP_ROLE, ModelPicker, detail_text, group_text
from .model_set import ModelSetButton

if TYPE_CHECKING:
    from ...core.occupancy import Occupancy
    from ...services.models.catalog import ModelChoice

COMMANDS = {"/context": "context", "/compact": "compact"}
# An MCP prompt as a command: "/server:prompt" and its arguments, on one line
PROMPT_COMMAND = re.compile(r"(/[\w.-]+:[\w.-]+)(?:[ \t]+(.*))?\Z")
HINT = "Enter to send · Shift+Enter for a new line"
SHORT_HINT = "Shift+Enter: new line"
MODEL_ID_ROLE = Qt.ItemDataRole.UserRole + 1


class Composer(QWidget):
    sendRequested = Signal(str)
    stopRequested = Signal()
    commandRequested = Signal(str)  # "context" | "compact"
    # "/server:prompt key=value …": an MCP prompt to expand (command, the rest of the line)
    promptRequested = Signal(str, str)
    modelChanged = Signal(str)
    contextRequested = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Composer")
        self._running = False
        self._files_staged: Callable[[], bool] = lambda: False
        self._named_only = False  # the picker holds one model named before the list came

        self.card = QFrame()
        self.card.setObjectName("ComposerCard")
        self.input = ComposerInput()
        self.input.submitted.connect(self.submit)
        self.input.escapePressed.connect(self._escape)
        self.input.textChanged.connect(self._update_send)
        self.input.focusChanged.connect(self._focus_changed)

        self.models = QStandardItemModel(self)
        self.picker = ModelPicker()
        self.picker.setObjectName("ModelPicker")
        self.picker.setModel(self.models)
        self.picker.setAccessibleName("Model")
        self.picker.setToolTip("Model for this chat")
        self.picker.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.picker.setMinimumContentsLength(8)
        self.picker.setPlaceholderText("Models…")  # until the list of models arrives
        self.picker.currentIndexChanged.connect(self._picked)
        self.several = ModelSetButton()  # the next message to several models at once
        self.several.focus_home = self.input  # typing after it closes goes to the message
        self.picker.severalRequested.connect(lambda: self.several.open_popup(self.picker))

        self.ring = OccupancyRing()
        self.ring.clicked.connect(self.contextRequested)

        self.hint = ComposerHint((HINT, SHORT_HINT))  # fits itself to the room it gets

        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("SendButton")
        self.send_button.setAccessibleName("Send")
        self.send_button.setToolTip("Send (Enter)")
        self.send_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.send_button.clicked.connect(self._send_clicked)

        footer = QHBoxLayout()
        footer.setContentsMargins(0, 0, 0, 0)
        footer.setSpacing(6)
        self.attach_button = PaperclipButton()  # files for the next message
        footer.addWidget(self.attach_button)
        footer.addWidget(self.picker)
        footer.addWidget(self.several)
        footer.addWidget(self.ring)
        footer.addWidget(self.hint, 1)
        footer.addWidget(self.send_button)
        inner = QVBoxLayout(self.card)
        self.card_layout = inner  # attach chips go above the input
        inner.setContentsMargins(12, 10, 10, 8)
        inner.setSpacing(6)
        inner.addWidget(self.input)
        inner.addLayout(footer)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(16, 4, 16, 14)
        outer.addWidget(self.card)
        self._update_send()

    # --- text ----------------------------------------------------------------------

    def text(self) -> str:
        return self.input.toPlainText()

    def set_text(self, text: str) -> None:
        self.input.setPlainText(text)
        cursor = self.input.textCursor()
        cursor.movePosition(cursor.MoveOperation.End)
        self.input.setTextCursor(cursor)

    def clear_if(self, text: str) -> None:
        """Empty the field if it still holds exactly `text` (the user may have typed on)."""
        if self.text() == text:
            self.input.clear()

    def restore(self, text: str) -> None:
        """Put back text that did not reach the model, without losing anything typed since."""
        current = self.text()
        if current == text:
            return
        self.set_text(text if not current.strip() else f"{text}\n\n{current}")

    def focus_input(self) -> None:
        self.input.setFocus(Qt.FocusReason.OtherFocusReason)

    def submit(self) -> None:
        raw = self.text()
        text = raw.strip()
        if not text and not self.files_staged():
            return
        command = COMMANDS.get(text.lower())
        if command is not None:
            self.input.clear()
            self.commandRequested.emit(command)
            return
        prompt = PROMPT_COMMAND.match(text)
        if prompt is not None:
            # the text stays until the expansion replaces it (or says what is wrong)
            self.promptRequested.emit(prompt.group(1), prompt.group(2) or "")
            return
        if self._running:
            return  # the text stays; sending waits for the reply to end or be stopped
        self.sendRequested.emit(raw)

    # --- state ---------------------------------------------------------------------

    def set_files_staged(self, staged: Callable[[], bool]) -> None:
        """Whether files wait for the next message: one of files alone can be sent."""
        self._files_staged = staged
        self._update_send()

    def files_staged(self) -> bool:
        return self._files_staged()

    @property
    def running(self) -> bool:
        return self._running

    def set_running(self, running: bool) -> None:
        self._running = running
        self.send_button.setProperty("stop", running)
        self.send_button.style().unpolish(self.send_button)
        self.send_button.style().polish(self.send_button)
        self._update_send()

    def set_occupancy(self, occupancy: Occupancy | None) -> None:
        self.ring.set_occupancy(occupancy)

    def set_models(self, choices: Sequence[ModelChoice], current: str | None) -> None:
        """Fill the picker; `current` is selected (added as a greyed entry if unknown)."""
        self.picker.blockSignals(True)
        try:
            self._named_only = False
            self.models.clear()
            self.picker.setPlaceholderText("Choose a model" if choices else "No models")
            for choice in choices:
                item = QStandardItem(choice.label)
                item.setData(choice.id, MODEL_ID_ROLE)
                item.setData(group_text(choice), GROUP_ROLE)
                item.setData(detail_text(choice), DETAIL_ROLE)
                item.setToolTip(
                    f"{choice.id}" + (f" at {choice.api_base}" if choice.api_base else "")
                    + (" (local)" if choice.local else "")
                    + (f": {choice.reason}" if choice.reason else "")
                )
                item.setEnabled(choice.available)
                self.models.appendRow(item)
            if current and current not in {c.id for c in choices}:
                item = QStandardItem(f"{current} (not available)")
                item.setData(current, MODEL_ID_ROLE)
                self.models.appendRow(item)
            self.select_model(current)
            self.several.set_choices([(c.id, c.label, c.available) for c in choices])
        finally:
            self.picker.blockSignals(False)

    def name_model(self, model_id: str, label: str) -> None:
        """Until the list of models arrives: the one the window had last, by its name, so
        the first frame says which model a message goes to."""
        if (self.models.rowCount() and not self._named_only) or not model_id:
            return
        item = QStandardItem(label or model_id)
        item.setData(model_id, MODEL_ID_ROLE)
        self.picker.blockSignals(True)
        try:
            self._named_only = True
            self.models.clear()
            self.models.appendRow(item)
            self.picker.setCurrentIndex(0)
        finally:
            self.picker.blockSignals(False)

    def select_model(self, model_id: str | None) -> None:
        self.picker.blockSignals(True)
        try:
            for row in range(self.models.rowCount()):
                if self.models.item(row).data(MODEL_ID_ROLE) == model_id:
                    self.picker.setCurrentIndex(row)
                    return
            if self.models.rowCount() and self.picker.currentIndex() < 0:
                self.picker.setCurrentIndex(0)
        finally:
            self.picker.blockSignals(False)

    def current_model(self) -> str | None:
        row = self.picker.currentIndex()
        if row < 0:
            return None
        value = self.models.item(row).data(MODEL_ID_ROLE)
        return str(value) if value else None

    def model_ids(self) -> list[str]:
        return [str(self.models.item(r).data(MODEL_ID_ROLE)) for r in range(self.models.rowCount())]

    # --- internals -----------------------------------------------------------------

    def _picked(self, row: int) -> None:
        if row >= 0:
            value = self.models.item(row).data(MODEL_ID_ROLE)
            if value:
                self.modelChanged.emit(str(value))

    def _send_clicked(self) -> None:
        if self._running:
            self.stopRequested.emit()
        else:
            self.submit()

    def _escape(self) -> None:
        if self._running:
            self.stopRequested.emit()

    def _update_send(self) -> None:
        if self._running:
            self.send_button.setText("Stop")
            self.send_button.setAccessibleName("Stop")
            self.send_button.setToolTip("Stop the reply (Esc)")
            self.send_button.setEnabled(True)
        else:
            self.send_button.setText("Send")
            self.send_button.setAccessibleName("Send")
            self.send_button.setToolTip("Send (Enter)")
            self.send_button.setEnabled(bool(self.text().strip()) or self.files_staged())
        # quiet rather than hidden: the hint keeps the footer's spare room, so Send keeps
        # its size
        self.hint.set_shown(not self._running and not self.text())

    def _focus_changed(self, focused: bool) -> None:
        self.card.setProperty("focused", focused)
        self.card.style().unpolish(self.card)
        self.card.style().polish(self.card)
