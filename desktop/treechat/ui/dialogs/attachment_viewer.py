"""A sent attachment opened from its message: an image full size (fitted to the window, or at
its own size, scrolling), any other file as read-only text (a PDF's text page by page). Save…
writes the file's bytes back to disk under its own name, made safe."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QFontDatabase, QImage, QPixmap
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from ...core.attachments import safe_name

if TYPE_CHECKING:
    from PySide6.QtGui import QResizeEvent


class AttachmentViewer(QDialog):
    """Shows one attachment. `saveRequested(path)` is emitted when a place to save to was
    chosen; `save_to(path)` is the seam a test drives without the file dialog."""

    saveRequested = Signal(str)

    def __init__(self, name: str, detail: str, kind: str,
                 parent: QWidget | None = None) -> None:
        """`kind` "image" shows a picture; any other shows text."""
        super().__init__(parent)
        self.name = name
        self.kind = kind
        self.setObjectName("AttachmentViewer")
        self.setWindowTitle(name)
        self.setAccessibleName(f"Attachment {name}")
        self.setModal(False)
        self._image = QImage()
        self._pixmap: QPixmap | None = None  # made once; fitting scales a copy
        self._fit = True

        self.title = QLabel(name)
        self.title.setObjectName("AttachmentViewerTitle")
        font = self.title.font()
        font.setBold(True)
        self.title.setFont(font)
        self.title.setTextFormat(Qt.TextFormat.PlainText)  # a name is never markup
        self.title.setSizePolicy(QSizePolicy.Policy.Ignored, QSizePolicy.Policy.Preferred)
        self.detail = QLabel(detail)
        self.detail.setObjectName("AttachmentViewerDetail")
        self.detail.setTextFormat(Qt.TextFormat.PlainText)
        self.status = QLabel("Loading…")
        self.status.setObjectName("AttachmentViewerStatus")
        self.status.setWordWrap(True)

        self.picture = QLabel()
        self.picture.setObjectName("AttachmentViewerImage")
        self.picture.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.picture.setAccessibleName(f"Image {name}")
        self.image_area = QScrollArea()
        self.image_area.setWidget(self.picture)
        self.image_area.setWidgetResizable(True)
        self.image_area.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.text = QPlainTextEdit()
        self.text.setObjectName("AttachmentViewerText")
        self.text.setReadOnly(True)
        self.text.setAccessibleName(f"Text of {name}")
        self.text.setFont(QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont))
        self.image_area.setVisible(kind == "image")
        self.text.setVisible(kind != "image")

        self.zoom_button = QPushButton("Actual size")
        self.zoom_button.setObjectName("AttachmentZoom")
        self.zoom_button.setVisible(kind == "image")
        self.zoom_button.setEnabled(False)
        self.zoom_button.clicked.connect(self._toggle_fit)
        self.save_button = QPushButton("Save…")
        self.save_button.setObjectName("AttachmentSave")
        self.save_button.setToolTip(f"Save {name} to a folder")
        self.save_button.setEnabled(False)
        self.save_button.clicked.connect(self._choose_path)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)

        head = QVBoxLayout()
        head.setSpacing(2)
        head.addWidget(self.title)
        head.addWidget(self.detail)
        footer = QHBoxLayout()
        footer.addWidget(self.zoom_button)
        footer.addWidget(self.save_button)
        footer.addStretch(1)
        footer.addWidget(buttons)
        layout = QVBoxLayout(self)
        layout.addLayout(head)
        layout.addWidget(self.status)
        layout.addWidget(self.image_area, 1)
        layout.addWidget(self.text, 1)
        layout.addLayout(footer)
        self.resize(820, 620)

    # --- filled in once the bytes are read (off the GUI thread) --------------------------

    def show_image(self, image: QImage) -> None:
        self._image = image
        self._pixmap = QPixmap.fromImage(image) if not image.isNull() else None
        self.status.setVisible(False)
        self.zoom_button.setEnabled(not image.isNull())
        self._show_picture()

    def show_text(self, text: str) -> None:
        self.status.setVisible(False)
        self.text.setPlainText(text)

    def show_problem(self, message: str) -> None:
        self.status.setText(message)
        self.status.setVisible(True)

    def allow_save(self, allowed: bool = True) -> None:
        self.save_button.setEnabled(allowed)

    def suggested_name(self) -> str:
        return safe_name(self.name)

    def save_to(self, path: str) -> None:
        self.saveRequested.emit(path)

    def saved(self, path: Path) -> None:
        self.status.setText(f"Saved to {path}")
        self.status.setVisible(True)

    # --- internals -------------------------------------------------------------------

    def _choose_path(self) -> None:
        start = str(Path.home() / self.suggested_name())
        path, _ = QFileDialog.getSaveFileName(self, "Save attachment", start)
        if path:
            self.save_to(path)

    def _toggle_fit(self) -> None:
        self._fit = not self._fit
        self.zoom_button.setText("Actual size" if self._fit else "Fit to window")
        self._show_picture()

    def fitted(self) -> bool:
        return self._fit

    def _show_picture(self) -> None:
        pixmap = self._pixmap
        if pixmap is None:
            return
        self.image_area.setWidgetResizable(self._fit)
        if self._fit:
            room = self.image_area.viewport().size()
            if pixmap.width() > room.width() or pixmap.height() > room.height():
                pixmap = pixmap.scaled(room, Qt.AspectRatioMode.KeepAspectRatio,
                                       Qt.TransformationMode.SmoothTransformation)
        self.picture.setPixmap(pixmap)
        if not self._fit:
            self.picture.resize(pixmap.size())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if self._fit:
            self._show_picture()
