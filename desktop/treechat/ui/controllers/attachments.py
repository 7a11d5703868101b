"""Files in a message, in the window: the paperclip, files dropped onto the composer or the
chat, an image (or a file's address) pasted from the clipboard. Each is prepared off the GUI
thread (checked, decoded, counted) behind a busy chip, then shows as a chip with its size and
its token cost for the chosen model's provider until it is sent or removed. A refused file
says why in the banner; nothing else staged or typed is lost.

Before a message with images goes to a model that cannot see, the banner offers the choice:
switch to a model that can, send without the images, or cancel. Sent files show in their
message: thumbnails (decoded off the GUI thread, kept) and cards that open a viewer."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QBuffer,
    QByteArray,
    QEvent,
    QIODevice,
    QMimeData,
    QObject,
    QSize,
    Qt,
)
from PySide6.QtGui import (
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
    QImageReader,
    QKeyEvent,
    QKeySequence,
)
from PySide6.QtWidgets import QFileDialog

from ...core.attachments import AttachmentError, human_size
from ...services.attachments import PreparedFile, pdf_pages_text
from ...tools.text_decoding import decode_text
from ..chat.attachment_views import ShownAttachment, ThumbnailCache, shown_attachments
from ..composer.file_chips import FileChipBar, FileChipState
from ..dialogs.attachment_viewer import AttachmentViewer

if TYPE_CHECKING:
    from .conversation import ConversationController

log = logging.getLogger(__name__)

PASTED_IMAGE = "pasted image.png"
# The longest side a viewer decodes an image to: larger ones are shown scaled (what a screen
# can show; the file saved back is the original).
VIEWER_MAX_SIDE = 4096


@dataclass
class Staged:
    """A file on its way into the next message: busy until prepared, then ready."""

    key: int
    name: str
    size: int = 0
    prepared: PreparedFile | None = None
    tokens: int | None = None
    provider: str = ""

    def chip(self, note: str = "") -> FileChipState:
        kind = self.prepared.kind if self.prepared is not None else ""
        pages = self.prepared is not None and self.prepared.page_images
        return FileChipState(self.key, self.name, self.size, kind, self.tokens,
                             self.prepared is None, note, pages)


def local_files(data: QMimeData) -> list[Path]:
    """The local files a drag or a paste carries (folders and remote addresses left out)."""
    if not data.hasUrls():
        return []
    return [Path(url.toLocalFile()) for url in data.urls() if url.isLocalFile()
            and url.toLocalFile()]


def _png_of(image: QImage) -> bytes:
    array = QByteArray()
    buffer = QBuffer(array)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    image.save(buffer, "PNG")  # type: ignore[call-overload]  # PySide takes the str
    buffer.close()
    return bytes(array.data())


def decode_full(data: bytes, max_side: int = VIEWER_MAX_SIDE) -> QImage:
    """An image for the viewer, at most `max_side` on its long edge (decoded scaled)."""
    array = QByteArray(data)
    buffer = QBuffer(array)
    buffer.open(QIODevice.OpenModeFlag.ReadOnly)
    reader = QImageReader(buffer)
    reader.setAutoTransform(True)
    size = reader.size()
    if size.isValid() and max(size.width(), size.height()) > max_side:
        reader.setScaledSize(size.scaled(QSize(max_side, max_side),
                                         Qt.AspectRatioMode.KeepAspectRatio))
    image = reader.read()
    buffer.close()
    return image


def readable_text(item: ShownAttachment, data: bytes) -> str:
    """What the viewer shows of a file that is not an image: its text, a PDF's by page."""
    if item.kind == "pdf":
        pages = pdf_pages_text(data, item.name, 10_000)
        return "\n\n".join(f"--- page {i} of {len(pages)} ---\n{t.strip()}"
                           for i, t in enumerate(pages, 1))
    text = decode_text(data)
    return text if text is not None else "(this file is not text)"


class _Drops(QObject):
    """Files dropped onto the composer or the chat, and pastes into the message box."""

    def __init__(self, owner: AttachmentsController) -> None:
        super().__init__(owner)
        self.owner = owner

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            drag = event
            assert isinstance(drag, QDragMoveEvent)  # DragEnter's event is one too
            if local_files(drag.mimeData()):
                drag.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop:
            drop = event
            assert isinstance(drop, QDropEvent)
            files = local_files(drop.mimeData())
            if files:
                drop.acceptProposedAction()
                self.owner.add_paths(files)
                return True
        elif kind == QEvent.Type.KeyPress:
            key = event
            assert isinstance(key, QKeyEvent)
            if key.matches(QKeySequence.StandardKey.Paste):
                return self.owner.paste(QGuiApplication.clipboard().mimeData())
        return False


class AttachmentsController(QObject):
    def __init__(self, conversation: ConversationController) -> None:
        super().__init__(conversation)
        self._c = conversation
        self.service = conversation.services.chat.attachments
        self.limits = self.service.limits
        self.staged: dict[str, list[Staged]] = {}  # by session id; "" = a new chat
        self._keys = itertools.count(1)
        self._provider = "openai"
        self._held: tuple[str, str | None] | None = None  # a send waiting for the choice
        self.viewers: list[AttachmentViewer] = []
        self.thumbnails = ThumbnailCache(self)
        self.chips = FileChipBar()
        self._mount()

    # --- mounting ------------------------------------------------------------------

    def _mount(self) -> None:
        c = self._c
        composer = c.parts.composer
        layout = composer.card_layout
        layout.insertWidget(layout.indexOf(composer.input), self.chips)
        self.chips.removeRequested.connect(self.remove)
        self.chips.pageImagesToggled.connect(self.set_page_images)
        self.button = composer.attach_button
        self.button.clicked.connect(self.choose_files)
        self.drops = _Drops(self)
        chat = c.parts.chat
        for target in (composer, composer.card, composer.input, composer.input.viewport(),
                       chat.list.viewport()):
            target.setAcceptDrops(True)
            target.installEventFilter(self.drops)
        composer.input.installEventFilter(self.drops)  # Ctrl+V of an image or a file
        self.thumbnails.connect_source(self.service.read, lambda coro: c.spawn(coro, "thumb"))
        self.thumbnails.ready.connect(lambda _sha: chat.list.viewport().update())
        chat.delegate.painter.thumbnails = self.thumbnails
        chat.attachmentOpened.connect(self.open_attachment)
        composer.modelChanged.connect(lambda _model: self.recount())
        c.sessionOpened.connect(lambda _view: self._show())
        c.parts.banner.actionTriggered.connect(self._banner_action)
        c.turns.take_files_from(self.take, self.preflight, self.has_files)
        self.recount()

    def _key(self) -> str:
        return self._c.current_session_id or ""

    # --- staging -------------------------------------------------------------------

    def current(self) -> list[Staged]:
        return list(self.staged.get(self._key(), ()))

    def has_files(self) -> bool:
        return any(s.prepared is not None for s in self.staged.get(self._key(), ()))

    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self._c.parts.window, "Attach files", str(Path.home()),
            "All files (*);;Images (*.png *.jpg *.jpeg *.webp *.gif);;PDF (*.pdf);;"
            "Text and code (*.txt *.md *.py *.json *.csv *.log)")
        if paths:
            self.add_paths([Path(p) for p in paths])

    def add_paths(self, paths: Sequence[Path]) -> None:
        """Stage files from disk: a busy chip each at once, prepared off the GUI thread."""
        key = self._key()
        for path in paths:
            if not self._room_for(key, path.name, _size_of(path)):
                return
            staged = Staged(next(self._keys), path.name, _size_of(path))
            self.staged.setdefault(key, []).append(staged)
            self._c.spawn(self._prepare(key, staged, self.service.prepare([path])),
                          name="attach-file")
        self._show()

    def add_data(self, data: bytes, name: str) -> None:
        key = self._key()
        if not self._room_for(key, name, len(data)):
            return
        staged = Staged(next(self._keys), name, len(data))
        self.staged.setdefault(key, []).append(staged)
        self._c.spawn(self._prepare(key, staged, self._one(data, name)), name="attach-data")
        self._show()

    async def _one(self, data: bytes, name: str) -> tuple[PreparedFile, ...]:
        return (await self.service.prepare_data(data, name),)

    def paste(self, data: QMimeData | None) -> bool:
        """A paste into the message box: an image or files become attachments (True);
        anything else is pasted as text (False)."""
        if data is None:
            return False
        files = local_files(data)
        if files:
            self.add_paths(files)
            return True
        if data.hasImage():
            image = data.imageData()
            if isinstance(image, QImage) and not image.isNull():
                self._c.spawn(self._paste_image(image), name="paste-image")
                return True
        return False

    async def _paste_image(self, image: QImage) -> None:
        png = await asyncio.to_thread(_png_of, image)  # a screenshot's PNG encode is slow
        self.add_data(png, PASTED_IMAGE)

    def _room_for(self, key: str, name: str, size: int) -> bool:
        """The message's caps, checked before anything is read: how many files, how much."""
        staged = self.staged.get(key, [])
        limits = self.limits
        if len(staged) >= limits.max_files:
            self._refuse(f"{name} was not attached: a message can carry at most "
                         f"{limits.max_files} files.")
            return False
        total = sum(s.size for s in staged) + size
        if total > limits.max_message_bytes:
            self._refuse(f"{name} was not attached: with it, this message would carry "
                         f"{human_size(total)}; one message can carry at most "
                         f"{human_size(limits.max_message_bytes)}.")
            return False
        return True

    async def _prepare(self, key: str, staged: Staged,
                       work: Coroutine[Any, Any, tuple[PreparedFile, ...]]) -> None:
        try:
            prepared = await work
        except AttachmentError as exc:
            self._drop(key, staged)
            self._refuse(str(exc))
            return
        except Exception as exc:  # a file that cannot be read says so
            log.warning("could not prepare %s", staged.name, exc_info=True)
            self._drop(key, staged)
            self._refuse(f"{staged.name} could not be attached: {exc}")
            return
        if staged not in self.staged.get(key, []):
            return  # removed while it was prepared
        (ready,) = prepared
        staged.prepared = ready
        staged.name = ready.ref.name
        staged.size = ready.ref.size
        await self._count(staged)
        self._show()

    async def _count(self, staged: Staged) -> None:
        if staged.prepared is None:
            return
        provider = self._provider
        staged.tokens = await self.service.tokens(staged.prepared,
                                                  "anthropic" if provider == "anthropic"
                                                  else "openai")
        staged.provider = provider

    def recount(self) -> None:
        """The chosen model changed: each chip's cost for its provider."""
        async def work() -> None:
            try:
                endpoint = await self._c.services.chat.model_endpoint(
                    self._c.models.selected())
                self._provider = "anthropic" if endpoint.anthropic else "openai"
            except Exception:  # no model yet: the OpenAI rule meanwhile
                self._provider = "openai"
            for items in list(self.staged.values()):
                for staged in items:
                    if staged.prepared is not None and staged.provider != self._provider:
                        await self._count(staged)
            self._show()

        self._c.spawn(work(), name="attach-recount")

    def set_page_images(self, chip_key: int, wanted: bool) -> None:
        """A PDF's chip: send its first pages as images too (for a model that sees), or not;
        its cost is recounted."""
        for items in self.staged.values():
            for staged in items:
                if staged.key == chip_key and staged.prepared is not None:
                    staged.prepared = staged.prepared.with_page_images(wanted)
                    staged.provider = ""  # counted again below

        async def work() -> None:
            for items in list(self.staged.values()):
                for staged in items:
                    if staged.key == chip_key:
                        await self._count(staged)
            self._show()

        self._c.spawn(work(), name="attach-pages")

    def remove(self, chip_key: int) -> None:
        for items in self.staged.values():
            for staged in list(items):
                if staged.key == chip_key:
                    items.remove(staged)
        self._show()

    def _drop(self, key: str, staged: Staged) -> None:
        items = self.staged.get(key, [])
        if staged in items:
            items.remove(staged)
        self._show()

    def _refuse(self, reason: str) -> None:
        self._c.parts.banner.show_notice("Not attached", reason)

    def _show(self) -> None:
        self.chips.set_files([s.chip() for s in self.staged.get(self._key(), ())])
        self._c.parts.composer.set_files_staged(self.has_files)  # Send for files alone
        self._c.occupancy.pending_changed()  # the ring counts the chips' cost

    def take(self, session_id: str) -> list[PreparedFile]:
        """The ready files of the chat being sent to (or of the new chat it came from), for
        its send; their chips go. A file still being prepared stays for the next message."""
        key = session_id if session_id in self.staged else ""
        items = self.staged.get(key, [])
        ready = [s for s in items if s.prepared is not None]
        self.staged[key] = [s for s in items if s.prepared is None]
        if not self.staged[key]:
            del self.staged[key]
        self._show()
        return [s.prepared for s in ready if s.prepared is not None]

    # --- before sending: a model that cannot see ------------------------------------

    async def preflight(self, text: str, model: str | None) -> bool:
        """False (and the banner offers the choice) when the message's images would go to
        a model that cannot see them."""
        images = [s for s in self.staged.get(self._key(), ())
                  if s.prepared is not None and (s.prepared.kind == "image"
                                                 or s.prepared.page_images)]
        if not images:
            return True
        chat = self._c.services.chat
        if await chat.sees_images(model):
            return True
        seeing = await self._seeing_model()
        self._held = (text, seeing)
        names = ", ".join(s.name for s in images)
        label = self._c.models.label_for(model or "") or "This model"
        actions: tuple[str, ...] = ("send_without_images", "cancel")
        where = ("Choose a model that accepts images in the picker, send without them, or "
                 "cancel.")
        if seeing is not None:
            actions = ("switch_to_vision", *actions)
            where = (f"Switch to {self._c.models.label_for(seeing)} (it can see images) and "
                     "send, send without the images, or cancel.")
        self._c.parts.banner.show_notice(
            "This model cannot see images",
            f"{label} does not accept images, and this message carries {names}. {where}",
            actions=actions)
        return False

    async def _seeing_model(self) -> str | None:
        chat = self._c.services.chat
        for choice in self._c.models.choices:
            if choice.available and await chat.sees_images(choice.id):
                return choice.id
        return None

    def _banner_action(self, key: str) -> None:
        held = self._held
        if key == "cancel":
            self._held = None
            return
        if held is None or key not in ("switch_to_vision", "send_without_images"):
            return
        self._held = None
        text, seeing = held
        composer = self._c.parts.composer
        if key == "switch_to_vision" and seeing is not None:
            composer.select_model(seeing)
            self._c.models.set_model(seeing)
            self.recount()
        elif key == "send_without_images":
            for items in self.staged.values():
                items[:] = [s for s in items if s.prepared is None
                            or (s.prepared.kind != "image" and not s.prepared.page_images)]
            self._show()
        self._c.turns.send(composer.text() if composer.text().strip() else text)

    # --- sent attachments ------------------------------------------------------------

    def open_attachment(self, node_id: str, index: int) -> AttachmentViewer | None:
        view = self._c.current_view
        node = view.graph.find(node_id) if view is not None else None
        if node is None:
            return None
        items = shown_attachments(node.metadata)
        if not 0 <= index < len(items) or items[index].kind == "placeholder":
            return None
        item = items[index]
        viewer = AttachmentViewer(item.name, item.detail, item.kind, self._c.parts.window)
        viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
        self.viewers.append(viewer)
        viewer.destroyed.connect(lambda *_: self._forget(viewer))
        holder: dict[str, bytes] = {}
        viewer.saveRequested.connect(lambda path: self._c.spawn(
            self._save(viewer, holder, path), name="attach-save"))
        viewer.show()
        self._c.spawn(self._fill(viewer, item, holder), name="attach-open")
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


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0

