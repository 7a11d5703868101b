"""Merge… : pick the base branch among the selected heads and say what the merge should do.
Non-modal (`open()`); the choice arrives through `mergeAccepted`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)

from ...core.model import Node
from ...services.merge import DEFAULT_MERGE_INSTRUCTION

LABEL_CHARS = 60  # of a head's text in its choice


def head_choices(heads: Sequence[Node], current: str | None,
                 text_of: Callable[[Node], str],
                 model_name: Callable[[str], str]) -> list[tuple[str, str]]:
    """(node id, label) for each head a merge may take as its base, told apart even when the
    replies begin alike: numbered as picked, the checked-out one marked, with the model (when
    the heads were written by more than one) and the time each was written."""
    models = {str(h.metadata.get("model") or h.name or "") for h in heads}
    out = []
    for number, node in enumerate(heads, start=1):
        parts = [f"{number}."]
        model = str(node.metadata.get("model") or node.name or "")
        if len(models) > 1 and model:
            parts.append(model_name(model) + " ·")
        parts.append(datetime.fromtimestamp(node.created_at).strftime("%d %b %H:%M") + " ·")
        text = " ".join(text_of(node).split())
        parts.append(text[:LABEL_CHARS] + ("…" if len(text) > LABEL_CHARS else "") or node.id)
        if node.id == current:
            parts.append("(checked out)")
        out.append((node.id, " ".join(parts)))
    return out


class MergeDialog(QDialog):
    mergeAccepted = Signal(str, list, str)  # base head, all heads, instruction

    def __init__(self, heads: Sequence[tuple[str, str]], parent: QWidget | None = None,
                 base: str | None = None) -> None:
        """`heads` are (node id, label) pairs of the branch heads to merge."""
        super().__init__(parent)
        self.setObjectName("MergeDialog")
        self.setWindowTitle("Merge branches")
        self.heads = [h for h, _ in heads]
        intro = QLabel(
            f"Merge {len(heads)} branches into one reply. The reply is written on the base "
            "branch; the others are brought in as attached context and marked merged."
        )
        intro.setWordWrap(True)
        self.base = QComboBox()
        self.base.setAccessibleName("Base branch")
        for node_id, label in heads:
            self.base.addItem(label, node_id)
        if base in self.heads:
            self.base.setCurrentIndex(self.heads.index(base))
        self.instruction = QPlainTextEdit(DEFAULT_MERGE_INSTRUCTION)
        self.instruction.setAccessibleName("Merge instruction")
        self.instruction.setMinimumHeight(90)
        form = QFormLayout()
        form.addRow("Base branch", self.base)
        form.addRow("Instruction", self.instruction)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Cancel)
        self.merge_button = self.buttons.addButton("Merge", QDialogButtonBox.ButtonRole.AcceptRole)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        box.addWidget(intro)
        box.addLayout(form)
        box.addWidget(self.buttons)
        self.resize(460, 260)

    def chosen_base(self) -> str:
        return str(self.base.currentData())

    def accept(self) -> None:
        text = self.instruction.toPlainText().strip() or DEFAULT_MERGE_INSTRUCTION
        self.mergeAccepted.emit(self.chosen_base(), list(self.heads), text)
        super().accept()
