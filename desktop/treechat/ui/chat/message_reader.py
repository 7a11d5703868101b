"""One message as selectable text in a small window beside the conversation (rows are
painted, so their text cannot be selected in place); never modal."""

from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QTextBrowser, QVBoxLayout, QWidget

from .model import ChatRow, RowKind


class MessageReader(QDialog):
    """One message as selectable text, beside the conversation (never modal)."""

    def __init__(self, parent: QWidget) -> None:
        super().__init__(parent)
        self.setObjectName("messageReader")
        self.setModal(False)
        self.resize(720, 560)
        self.browser = QTextBrowser(self)
        self.browser.setOpenExternalLinks(True)
        self.browser.setAccessibleName("Message text")
        self.browser.document().setDocumentMargin(14)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close, self)
        buttons.rejected.connect(self.close)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(8, 8, 8, 8)
        layout.addWidget(self.browser, 1)
        layout.addWidget(buttons)

    def show_row(self, row: ChatRow) -> None:
        who = {RowKind.USER: "Your message", RowKind.TOOL: f"Result of {row.label}",
               RowKind.SYSTEM: "System prompt"}.get(row.kind, row.model or "Reply")
        self.setWindowTitle(f"{who} — select and copy any part")
        if row.kind in (RowKind.ASSISTANT, RowKind.STREAM):
            self.browser.setMarkdown(row.text)
        else:
            self.browser.setPlainText(row.text)
        self.show()
        self.activateWindow()
        self.browser.setFocus()
