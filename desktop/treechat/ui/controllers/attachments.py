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
from typing import Any

from PySide6.QtCore import (
    QBuffer,
    QByteArray,
    QEvent,
    QIODevice,
    QMimeData,
    QObject,
    Signal,
)
from PySide6.QtGui import (
    QDragMoveEvent,
    QDropEvent,
    QGuiApplication,
    QImage,
    QImageWriter,
    QKeyEvent,
    QKeySequence,
)
from PySide6.QtWidgets import QFileDialog, QWidget

from ...core.attachments import AttachmentError, human_size
from ...services.attachments import PreparedFile
from ...services.turns.chat_service import ChatService
from ..chat.attachment_views import ThumbnailCache
from ..chat.view import ChatView
from ..composer.composer import Composer
from ..composer.file_chips import FileChipBar, FileChipState
from ..dialogs.attachment_viewer import AttachmentViewer
from ..shell.error_banner import ErrorBanner
from .attachment_viewers import AttachmentViewers
from .ports import ModelPicker, OpenChat, Spawner

log = logging.getLogger(__name__)

PASTED_IMAGE = "pasted image.png"


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
    QImageWriter(buffer, QByteArray(b"PNG")).write(image)  # typed, unlike save(device, str)
    buffer.close()
    return bytes(array.data())


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
    """The files staged for each chat's next message (their chips), and the sent ones."""

    filesChanged = Signal()  # a chip came, went or was counted: the ring counts them again
    sendRequested = Signal(str)  # the message held for the choice about images, to send

    def __init__(
        self,
        parent: QObject,
        *,
        chat_service: ChatService,
        chat: OpenChat,
        models: ModelPicker,
        tasks: Spawner,
        composer: Composer,
        chat_view: ChatView,
        banner: ErrorBanner,
        window: QWidget,
    ) -> None:
        super().__init__(parent)
        self._chat = chat_service
        self._open = chat
        self._models = models
        self._tasks = tasks
        self._composer = composer
        self._chat_view = chat_view
        self._banner = banner
        self._window = window
        self.service = chat_service.attachments
        self.limits = self.service.limits
        self.staged: dict[str, list[Staged]] = {}  # by session id; "" = a new chat
        self._keys = itertools.count(1)
        self._provider = "openai"
        self._held: tuple[str, str | None] | None = None  # a send waiting for the choice
        self.sent = AttachmentViewers(self.service, chat=chat, tasks=tasks, window=window)
        self.viewers = self.sent.viewers
        self.thumbnails = ThumbnailCache(self)
        self.chips = FileChipBar()
        self._mount()

    # --- mounting ------------------------------------------------------------------

    def _mount(self) -> None:
        composer = self._composer
        layout = composer.card_layout
        layout.insertWidget(layout.indexOf(composer.input), self.chips)
        self.chips.removeRequested.connect(self.remove)
        self.chips.pageImagesToggled.connect(self.set_page_images)
        self.button = composer.attach_button
        self.button.clicked.connect(self.choose_files)
        self.drops = _Drops(self)
        chat = self._chat_view
        for target in (composer, composer.card, composer.input, composer.input.viewport(),
                       chat.list.viewport()):
            target.setAcceptDrops(True)
            target.installEventFilter(self.drops)
        composer.input.installEventFilter(self.drops)  # Ctrl+V of an image or a file
        self.thumbnails.connect_source(self.service.read,
                                       lambda coro: self._tasks.spawn(coro, "thumb"))
        self.thumbnails.ready.connect(lambda _sha: chat.list.viewport().update())
        chat.delegate.painter.thumbnails = self.thumbnails
        chat.attachmentOpened.connect(self.open_attachment)
        composer.modelChanged.connect(lambda _model: self.recount())
        self._banner.actionTriggered.connect(self._banner_action)
        self.recount()

    def chat_opened(self, _view: object) -> None:
        """Another chat (or a new one) is open: its own staged files show."""
        self._show()

    def _key(self) -> str:
        return self._open.current_session_id or ""

    # --- staging -------------------------------------------------------------------

    def current(self) -> list[Staged]:
        return list(self.staged.get(self._key(), ()))

    def has_files(self) -> bool:
        return any(s.prepared is not None for s in self.staged.get(self._key(), ()))

    def choose_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self._window, "Attach files", str(Path.home()),
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
            self._tasks.spawn(self._prepare(key, staged, self.service.prepare([path])),
                          name="attach-file")
        self._show()

    def add_data(self, data: bytes, name: str) -> None:
        key = self._key()
        if not self._room_for(key, name, len(data)):
            return
        staged = Staged(next(self._keys), name, len(data))
        self.staged.setdefault(key, []).append(staged)
        self._tasks.spawn(self._prepare(key, staged, self._one(data, name)), name="attach-data")
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
                self._tasks.spawn(self._paste_image(image), name="paste-image")
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
                endpoint = await self._chat.model_endpoint(
                    self._models.selected())
                self._provider = "anthropic" if endpoint.anthropic else "openai"
            except Exception:  # no model yet: the OpenAI rule meanwhile
                self._provider = "openai"
            for items in list(self.staged.values()):
                for staged in items:
                    if staged.prepared is not None and staged.provider != self._provider:
                        await self._count(staged)
            self._show()

        self._tasks.spawn(work(), name="attach-recount")

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

        self._tasks.spawn(work(), name="attach-pages")

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
        self._banner.show_notice("Not attached", reason)

    def _show(self) -> None:
        self.chips.set_files([s.chip() for s in self.staged.get(self._key(), ())])
        self._composer.set_files_staged(self.has_files)  # Send for files alone
        self.filesChanged.emit()  # the ring counts the chips' cost

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
        chat = self._chat
        if await chat.sees_images(model):
            return True
        seeing = await self._seeing_model()
        self._held = (text, seeing)
        names = ", ".join(s.name for s in images)
        label = self._models.label_for(model or "") or "This model"
        actions: tuple[str, ...] = ("send_without_images", "cancel")
        where = ("Choose a model that accepts images in the picker, send without them, or "
                 "cancel.")
        if seeing is not None:
            actions = ("switch_to_vision", *actions)
            where = (f"Switch to {self._models.label_for(seeing)} (it can see images) and "
                     "send, send without the images, or cancel.")
        self._banner.show_notice(
            "This model cannot see images",
            f"{label} does not accept images, and this message carries {names}. {where}",
            actions=actions)
        return False

    async def _seeing_model(self) -> str | None:
        chat = self._chat
        for choice in self._models.choices:
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
        composer = self._composer
        if key == "switch_to_vision" and seeing is not None:
            composer.select_model(seeing)
            self._models.set_model(seeing)
            self.recount()
        elif key == "send_without_images":
            for items in self.staged.values():
                items[:] = [s for s in items if s.prepared is None
                            or (s.prepared.kind != "image" and not s.prepared.page_images)]
            self._show()
        self.sendRequested.emit(composer.text() if composer.text().strip() else text)

    # --- sent attachments ------------------------------------------------------------

    def open_attachment(self, node_id: str, index: int) -> AttachmentViewer | None:
        return self.sent.open(node_id, index)

    def close(self) -> None:
        self.sent.close()


def _size_of(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0

