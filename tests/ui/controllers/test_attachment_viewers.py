"""A sent file opened from its message: the image decoded no larger than a screen shows,
the text of a file that is one, and a viewer that says so when the bytes are not there."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtCore import QBuffer, QByteArray, QIODevice
from PySide6.QtGui import QColor, QImage, QImageWriter

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.chat.attachment_views import ShownAttachment
from treechat.ui.controllers.attachment_viewers import (
    AttachmentViewers,
    decode_full,
    readable_text,
)

from ..conftest import Aio, Desk


def png(width: int, height: int) -> bytes:
    image = QImage(width, height, QImage.Format.Format_RGB32)
    image.fill(QColor("#3a7bd5"))
    array = QByteArray()
    buffer = QBuffer(array)
    buffer.open(QIODevice.OpenModeFlag.WriteOnly)
    assert QImageWriter(buffer, QByteArray(b"PNG")).write(image)
    buffer.close()
    return bytes(array.data())


def item(kind: str, name: str) -> ShownAttachment:
    return ShownAttachment(kind, name, 0, "", "0" * 64)


def test_a_large_image_is_decoded_scaled_to_its_longest_side(qapp: object) -> None:
    scaled = decode_full(png(1200, 600), max_side=300)
    assert (scaled.width(), scaled.height()) == (300, 150)
    small = decode_full(png(40, 30), max_side=300)
    assert (small.width(), small.height()) == (40, 30)
    assert decode_full(b"not an image at all").isNull()


def test_a_text_file_reads_as_text_and_a_binary_one_says_it_is_not() -> None:
    assert readable_text(item("text", "notes.txt"), "Grüße\nline two".encode()) == (
        "Grüße\nline two")
    assert readable_text(item("file", "blob.bin"), bytes(range(256)) * 4) == (
        "(this file is not text)")


@dataclass
class ShownView:
    """The open chat, as the viewers read it: one view, no window behind it."""

    current_view: SessionView | None

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None


def test_a_file_whose_bytes_are_not_in_the_store_says_so_and_cannot_be_saved(
        desk: Desk, aio: Aio) -> None:
    meta = {"attachments": [
        {"sha256": "f" * 64, "media_type": "text/plain", "name": "gone.txt", "size": 12},
        {"placeholder": True, "kind": "image", "name": "never-carried.png"}]}
    user = Node("u1", 1, 1000.0, "s", "user", output="see the file", metadata=meta)
    graph = dag.Graph([user])
    view = SessionView(Session("s", "Chat", "u1", "m", 1000.0), graph,
                       dag.active_path(graph, "u1"), frozenset(), frozenset())
    viewers = AttachmentViewers(desk.services.chat.attachments, chat=ShownView(view),
                                tasks=desk.controller.tasks, window=desk.window)

    async def scenario() -> None:
        viewer = viewers.open("u1", 0)
        assert viewer is not None and viewers.viewers == [viewer]
        await desk.controller.tasks.idle()
        assert viewer.status.text() == "The bytes of gone.txt are not in this store."
        assert not viewer.save_button.isEnabled()
        viewer.close()
        await aio.settle(0.1)

    aio.run(scenario())
    # a placeholder, an index past the end and a node the view lacks open nothing
    assert viewers.open("u1", 1) is None
    assert viewers.open("u1", 5) is None
    assert viewers.open("elsewhere", 0) is None
    assert viewers.viewers == []  # the closed viewer is forgotten
