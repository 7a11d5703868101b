"""The chat's own controls, as small non-modal dialogs: its instructions (and the global ones),
its request parameters (only those the model takes), and the Usage view (spend by day, model
and chat). Each says what it did through a signal; the controller saves it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...core.chat_settings import REASONING_EFFORTS, ChatParameters
from ...core.money import spend_text
from ..common.safe_controls import guard_wheel

PREFIX_NOTE = (
    "These instructions are the start of every request. Changing them rewrites the cached "
    "prefix: the change applies from the next request on, and earlier replies keep what "
    "they were sent."
)


class InstructionsDialog(QDialog):
    """A chat's own system prompt (or, `global_scope`, the one under every chat's)."""

    saved = Signal(str)

    def __init__(self, title: str, text: str, *, global_scope: bool = False,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("InstructionsDialog")
        self.setWindowTitle(title)
        self.resize(560, 420)
        self.editor = QPlainTextEdit(text)
        self.editor.setObjectName("InstructionsEditor")
        self.editor.setAccessibleName("Instructions")
        self.editor.setPlaceholderText(
            "How every chat should answer, e.g. “Be brief; use British spelling.”"
            if global_scope else
            "What this chat should know or how it should answer (on top of the global "
            "instructions in Settings)."
        )
        self.note = QLabel(PREFIX_NOTE if not global_scope else
                           "Every chat runs under these, before its own instructions. " +
                           PREFIX_NOTE.split(". ", 1)[1])
        self.note.setObjectName("InstructionsNote")
        self.note.setWordWrap(True)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(self.editor, 1)
        layout.addWidget(self.note)
        layout.addWidget(buttons)

    def _save(self) -> None:
        self.saved.emit(self.editor.toPlainText())
        self.accept()


@dataclass(frozen=True, slots=True)
class Shown:
    """Which parameters the model takes (`providers.llm.ModelCapabilities` read by name)."""

    temperature: bool = True
    top_p: bool = True
    max_tokens: bool = True
    reasoning_effort: bool = False
    thinking_budget: bool = False

    @classmethod
    def of(cls, capabilities: Any) -> Shown:
        return cls(**{name: bool(getattr(capabilities, name, default))
                      for name, default in (("temperature", True), ("top_p", True),
                                            ("max_tokens", True), ("reasoning_effort", False),
                                            ("thinking_budget", False))})


class _Optional:
    """A parameter row: "set" ticks it on; unticked means the model's own default."""

    def __init__(self, editor: QWidget, value_set: bool) -> None:
        self.editor = editor
        self.check = QCheckBox()
        self.check.setChecked(value_set)
        editor.setEnabled(value_set)
        self.check.toggled.connect(editor.setEnabled)


class ParametersDialog(QDialog):
    """Temperature, top-p, maximum reply tokens and reasoning effort or thinking budget, each
    only where the model takes it; an unticked one is not sent (the model's default)."""

    saved = Signal(object)  # dict of parameter name -> value (None clears it)

    def __init__(self, model: str, current: ChatParameters, shown: Shown,
                 parent: QWidget | None = None, default_max_tokens: int | None = None) -> None:
        """`default_max_tokens`: the reply cap the model gets when the chat sets none (the
        bundled model's); its row is then shown ticked at that value."""
        super().__init__(parent)
        self.setObjectName("ParametersDialog")
        self._default_max_tokens = default_max_tokens
        self._had_max_tokens = current.max_tokens is not None
        self.setWindowTitle("Chat parameters")
        self.rows: dict[str, _Optional] = {}
        form = QFormLayout()
        if shown.temperature:
            spin = QDoubleSpinBox()
            spin.setRange(0.0, 2.0)
            spin.setSingleStep(0.1)
            spin.setValue(current.temperature if current.temperature is not None else 1.0)
            self._row(form, "temperature", "Temperature", spin, current.temperature)
        if shown.top_p:
            spin = QDoubleSpinBox()
            spin.setRange(0.01, 1.0)
            spin.setSingleStep(0.05)
            spin.setValue(current.top_p if current.top_p is not None else 1.0)
            self._row(form, "top_p", "Top-p", spin, current.top_p)
        if shown.max_tokens:
            ispin = QSpinBox()
            ispin.setRange(1, 1_000_000)
            ispin.setValue(current.max_tokens or default_max_tokens or 4096)
            label = "Maximum reply tokens"
            if default_max_tokens is not None:
                label += f" ({default_max_tokens:,} unless set)"
            self._row(form, "max_tokens", label, ispin,
                      current.max_tokens or default_max_tokens)
        if shown.reasoning_effort:
            combo = QComboBox()
            combo.addItems(list(REASONING_EFFORTS))
            combo.setCurrentText(current.reasoning_effort or "medium")
            self._row(form, "reasoning_effort", "Reasoning effort", combo,
                      current.reasoning_effort)
        if shown.thinking_budget:
            ispin = QSpinBox()
            ispin.setRange(1024, 1_000_000)
            ispin.setSingleStep(1024)
            ispin.setValue(current.thinking_budget or 4096)
            self._row(form, "thinking_budget", "Thinking budget (tokens)", ispin,
                      current.thinking_budget)
        about = QLabel(
            f"Shown are only the parameters {model or 'this model'} takes. An unticked "
            "one is not sent: the model uses its own default."
        )
        about.setObjectName("ParametersNote")
        self.note = about
        about.setWordWrap(True)
        self.error = QLabel("")
        self.error.setObjectName("ParametersError")
        self.error.setWordWrap(True)
        self.error.hide()
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addWidget(about)
        layout.addLayout(form)
        layout.addWidget(self.error)
        layout.addWidget(buttons)
        guard_wheel(self)  # a passing wheel never changes a parameter

    def _row(self, form: QFormLayout, name: str, label: str, editor: QWidget,
             value: object) -> None:
        row = _Optional(editor, value is not None)
        editor.setAccessibleName(label)
        editor.setObjectName(f"param_{name}")
        line = QWidget()
        inner = QFormLayout(line)
        inner.setContentsMargins(0, 0, 0, 0)
        inner.addRow(row.check, editor)
        form.addRow(label, line)
        self.rows[name] = row

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, row in self.rows.items():
            if not row.check.isChecked():
                out[name] = None
                continue
            editor = row.editor
            if isinstance(editor, QDoubleSpinBox):
                out[name] = round(editor.value(), 3)
            elif isinstance(editor, QSpinBox):
                out[name] = editor.value()
            elif isinstance(editor, QComboBox):
                out[name] = editor.currentText()
        if (not self._had_max_tokens and self._default_max_tokens is not None
                and out.get("max_tokens") == self._default_max_tokens):
            # left at the model's default cap: not stored, so it follows the chat's model
            out["max_tokens"] = None
        return out

    def show_error(self, message: str) -> None:
        self.error.setText(message)
        self.error.show()

    def _save(self) -> None:
        self.saved.emit(self.values())


def spend_note(free: int, unpriced: int, any_rows: bool) -> str:
    """The sentence under the usage tables, from the same counts as their cells."""
    if not any_rows:
        return "No requests yet."
    said = (f"{free} request{'s' if free != 1 else ''} to models on this computer cost "
            "nothing. ") if free else ""
    if unpriced:
        said += (f"{unpriced} request{'s' if unpriced != 1 else ''} to models with no known "
                 "price are counted in tokens only (unpriced).")
    else:
        said += f"Every {'other ' if free else ''}request here had a known price."
    return said


USAGE_GROUPS = (("day", "By day"), ("model", "By model"), ("session", "By chat"))


class UsageDialog(QDialog):
    """Spend by day, by model and by chat, from the usage ledger `treechat ledger` reads."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("UsageDialog")
        self.setWindowTitle("Usage")
        self.resize(640, 420)
        self.tabs = QTabWidget()
        self.tables: dict[str, QTableWidget] = {}
        for key, label in USAGE_GROUPS:
            table = QTableWidget(0, 6)
            table.setHorizontalHeaderLabels(
                ["Chat" if key == "session" else label.split()[-1].capitalize(),
                 "Requests", "In", "Cached", "Out", "Cost"])
            table.verticalHeader().hide()
            table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
            table.horizontalHeader().setStretchLastSection(True)
            self.tables[key] = table
            self.tabs.addTab(table, label)
        self.note = QLabel("")
        self.note.setWordWrap(True)
        layout = QVBoxLayout(self)
        layout.addWidget(self.tabs, 1)
        layout.addWidget(self.note)

    def show_rows(self, by: str, rows: Sequence[Any],
                  titles: Mapping[str, str] | None = None,
                  names: Callable[[str], str] | None = None) -> None:
        """Rows whose `free_requests` (models on this computer) are counted apart from their
        unpriced ones; a model is shown by its display name (`names`), its id in the
        tooltip. The note under the tables says the same counts as the "day" cells."""
        table = self.tables[by]
        table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            if by == "session":
                label = (titles or {}).get(row.key, row.label or row.key)
            elif by == "model" and names is not None:
                label = names(row.key) or row.key
            else:
                label = row.key
            cost = spend_text(row.cost_usd, row.requests, row.unpriced_requests,
                              row.free_requests)
            cells = (label, str(row.requests), f"{row.input_tokens:,}", f"{row.cache_read:,}",
                     f"{row.output_tokens:,}", cost)
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j == 0 and label != row.key:
                    item.setToolTip(row.key)
                if j:
                    item.setTextAlignment(Qt.AlignmentFlag.AlignRight
                                          | Qt.AlignmentFlag.AlignVCenter)
                table.setItem(i, j, item)
        table.resizeColumnsToContents()
        if by == "day":
            self.note.setText(spend_note(sum(r.free_requests for r in rows),
                                         sum(r.unpriced_requests for r in rows), bool(rows)))
