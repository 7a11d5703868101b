"""A sent file opened from its message: the viewer shows the image (decoded off the GUI
thread, scaled to what a screen shows) or the text (a PDF's by page), and saves the
original bytes where the user says."""

from __future__ import annotations

import asyncio
from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtGui import QImage
from PySide6.QtWidgets import QWidget

from ...core.attachments import AttachmentError
from ...services.attachments import AttachmentService, pdf_pages_text
from ...tools.text_decoding import decode_text
from ..chat.attachment_views import ShownAttachment, read_scaled, shown_attachments
from ..dialogs.attachment_viewer import AttachmentViewer
from .ports import OpenChat, Spawner

# The longest side a viewer decodes an image to: larger ones are shown scaled (what a screen
# can show; the file saved back is the original).
VIEWER_MAX_SIDE = 4096


def decode_full(data: bytes, max_side: int = VIEWER_MAX_SIDE) -> QImage:
    """An image for the viewer, at most `max_side` on its long edge (decoded scaled)."""
    return read_scaled(data, max_side)


def readable_text(item: ShownAttachment, data: bytes) -> str:
    """What the viewer shows of a file that is not an image: its text, a PDF's by page."""
    if item.kind == "pdf":
        pages = pdf_pages_text(data, item.name, 10_000)
        return "\n\n".join(f"--- page {i} of {len(pages)} ---\n{t.strip()}"
                           for i, t in enumerate(pages, 1))
    text = decode_text(data)
    return text if text is not None else "(this file is not text)"


class AttachmentViewers:
    """The viewers open on sent files, one per file opened."""

    def __init__(self, service: AttachmentService, *, chat: OpenChat, tasks: Spawner,
                 window: QWidget) -> None:
        self.service = service
        self._open = chat
        self._tasks = tasks
        self._window = window
        self.viewers: list[AttachmentViewer] = []

    def open(self, node_id: str, index: int) -> AttachmentViewer | None:
        view = self._open.current_view
        node = view.graph.find(node_id) if view is not None else None
        if node is None:
            return None
        items = shown_attachments(node.metadata)
        if not 0 <= index < len(items) or items[index].kind == "placeholder":
            return None
        item = items[index]
        viewer = AttachmentViewer(item.name, item.detail, item.kind, self._window)
        viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        self.viewers.append(viewer)
        viewer.destroyed.connect(lambda *_: self._forget(viewer))
        holder: dict[str, bytes] = {}
        viewer.saveRequested.connect(lambda path: self._tasks.spawn(
            self._save(viewer, holder, path), name="attach-save"))
        viewer.show()
        self._tasks.spawn(self._fill(viewer, item, holder), name="attach-open")
        return viewer

    def _forget(self, viewer: AttachmentViewer) -> None:
        if viewer in self.viewers:
            self.viewers.remove(viewer)

    async def _fill(self, viewer: AttachmentViewer, item: ShownAttachment,
                    holder: dict[str, bytes]) -> None:
        data = await self.service.read(item.sha256)
        if data is None:
            viewer.show_problem(f"The bytes of {item.name} are not in this store.")
            return
        holder["data"] = data
        viewer.allow_save()
        try:
            if item.kind == "image":
                image = await asyncio.to_thread(decode_full, data)
                if image.isNull():
                    viewer.show_problem(f"{item.name} could not be decoded.")
                else:
                    viewer.show_image(image)
            else:
                viewer.show_text(await asyncio.to_thread(readable_text, item, data))
        except AttachmentError as exc:
            viewer.show_problem(str(exc))

    async def _save(self, viewer: AttachmentViewer, holder: dict[str, bytes],
                    path: str) -> None:
        data = holder.get("data")
        if data is None:
            return
        target = Path(path)
        try:
            await asyncio.to_thread(target.write_bytes, data)
        except OSError as exc:
            viewer.show_problem(f"Could not save to {target}: {exc.strerror or exc}")
            return
        viewer.saved(target)

    def close(self) -> None:
        for viewer in list(self.viewers):
            viewer.close()
