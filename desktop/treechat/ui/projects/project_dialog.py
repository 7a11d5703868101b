"""The dialog that makes a project or edits one: its name, the instructions every chat in it
follows (before the chat's own), and whether its chats may search the user's other chats.
Opened with `open()`, never `exec()` (no nested event loop under qasync); `saved` carries
what was typed."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QVBoxLayout,
    QWidget,
)


@dataclass(frozen=True, slots=True)
class ProjectFields:
    name: str
    instructions: str = ""
    memory: bool = False


class ProjectDialog(QDialog):
    saved = Signal(object)  # ProjectFields

    def __init__(self, parent: QWidget | None, fields: ProjectFields | None = None, *,
                 title: str = "New project") -> None:
        super().__init__(parent)
        self.setObjectName("ProjectDialog")
        self.setWindowTitle(title)
        self.setAccessibleName(title)
        start = fields or ProjectFields("")
        self.name = QLineEdit(start.name)
        self.name.setObjectName("ProjectName")
        self.name.setAccessibleName("Project name")
        self.name.setPlaceholderText("e.g. Kitchen renovation")
        self.name.setMaxLength(120)
        self.instructions = QPlainTextEdit(start.instructions)
        self.instructions.setObjectName("ProjectInstructions")
        self.instructions.setAccessibleName("Project instructions")
        self.instructions.setPlaceholderText(
            "Instructions every chat in this project follows, before its own")
        self.instructions.setMinimumHeight(110)
        self.memory = QCheckBox("Its chats may search my other chats (memory across chats)")
        self.memory.setObjectName("ProjectMemory")
        self.memory.setChecked(start.memory)
        self.problem = QLabel("")
        self.problem.setObjectName("FieldProblem")
        self.problem.setWordWrap(True)
        self.problem.hide()
        form = QFormLayout()
        form.addRow("Name", self.name)
        form.addRow("Instructions", self.instructions)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save
                                   | QDialogButtonBox.StandardButton.Cancel)
        self.save_button = buttons.button(QDialogButtonBox.StandardButton.Save)
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        box = QVBoxLayout(self)
        box.addLayout(form)
        box.addWidget(self.memory)
        box.addWidget(self.problem)
        box.addWidget(buttons)
        self.name.textChanged.connect(self._edited)
        self._edited()
        self.resize(480, 300)

    def fields(self) -> ProjectFields:
        return ProjectFields(" ".join(self.name.text().split()),
                             self.instructions.toPlainText(), self.memory.isChecked())

    def _edited(self) -> None:
        self.save_button.setEnabled(bool(self.fields().name))

    def _save(self) -> None:
        fields = self.fields()
        if not fields.name:
            self.show_problem("A project needs a name.")
            return
        self.saved.emit(fields)
        self.accept()

    def show_problem(self, text: str) -> None:
        self.problem.setText(text)
        self.problem.setVisible(bool(text))
