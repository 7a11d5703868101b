"""Chats dragged within the chat list: dropped on a project's folder (or on a chat in it) they
move into that project; dropped among the chats outside every project they move out. What a
dragged chat carries, and which chats a drag takes (the pressed one, with the other selected
chats when it is one of them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QMimeData, QModelIndex, QObject, QPoint, Qt, Signal
from PySide6.QtGui import (
    QColor,
    QDragMoveEvent,
    QDropEvent,
    QFontMetrics,
    QPainter,
    QPainterPath,
    QPixmap,
)
from PySide6.QtWidgets import QAbstractItemView, QListView

from ..common.theme import colors_of
from .roles import KIND_ROLE, PROJECT_ID_ROLE, SESSION_ID_ROLE

if TYPE_CHECKING:
    from .delegate import SessionListDelegate
    from .model import SessionListModel

CHATS_MIME = "application/x-treechat-chats"


def add_chats(data: QMimeData, session_ids: Sequence[str]) -> QMimeData:
    """`data` also carrying the chats `session_ids`, in order."""
    data.setData(CHATS_MIME, json.dumps(list(session_ids)).encode())
    return data


def read_chats(data: QMimeData | None) -> list[str]:
    """The chats a drag carries ([] for anything else, or a malformed one)."""
    if data is None or not data.hasFormat(CHATS_MIME):
        return []
    try:
        found = json.loads(bytes(data.data(CHATS_MIME).data()).decode())
    except (ValueError, UnicodeDecodeError):
        return []
    if not isinstance(found, list):
        return []
    return [str(s) for s in found if isinstance(s, str) and s]


def dragged_chats(view: QAbstractItemView, pressed: QModelIndex) -> list[str]:
    """The chats a drag from `pressed` takes: it first, then the other selected chats in the
    list's order when it is selected itself."""
    first = pressed.data(SESSION_ID_ROLE)
    if not first:
        return []
    out = [str(first)]
    selection = view.selectionModel()
    if selection is not None and selection.isSelected(pressed):
        for index in sorted(selection.selectedIndexes(), key=lambda i: i.row()):
            other = index.data(SESSION_ID_ROLE)
            if other and str(other) not in out:
                out.append(str(other))
    return out


def drag_label(view: QAbstractItemView, chats: Sequence[str], title: str) -> QPixmap:
    """What the pointer carries while chats are dragged: a pill with the chat's title, or how
    many chats go, in the list's colours."""
    text = title if len(chats) == 1 else f"{len(chats)} chats"
    metrics = QFontMetrics(view.font())
    text = metrics.elidedText(text, Qt.TextElideMode.ElideRight, 260)
    ratio = view.devicePixelRatioF()
    width, height = metrics.horizontalAdvance(text) + 24, metrics.height() + 12
    pixmap = QPixmap(int(width * ratio), int(height * ratio))
    pixmap.setDevicePixelRatio(ratio)
    pixmap.fill(Qt.GlobalColor.transparent)
    colors = colors_of(view.palette())
    painter = QPainter(pixmap)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing)
    path = QPainterPath()
    path.addRoundedRect(0.5, 0.5, width - 1, height - 1, height / 2, height / 2)
    painter.fillPath(path, QColor(colors.accent))
    painter.setPen(QColor(colors.accent_text))
    painter.setFont(view.font())
    painter.drawText(0, 0, width, height, int(Qt.AlignmentFlag.AlignCenter), text)
    painter.end()
    return pixmap


class ChatDropFilter(QObject):
    """Watches the list's viewport for chats dropped on it; `chatsDropped(ids, project)`
    names the chats that change place and where to ("" for outside every project). The
    project a drop would go to is drawn highlighted while the drag is over it."""

    chatsDropped = Signal(list, str)
    hintChanged = Signal(str)  # what releasing here would do, in words ("" for nothing)

    def __init__(self, view: QListView, model: SessionListModel,
                 delegate: SessionListDelegate) -> None:
        super().__init__(view)
        self.view = view
        self.model = model
        self.delegate = delegate
        self._said = ""
        view.viewport().setAcceptDrops(True)
        view.viewport().installEventFilter(self)

    def target_at(self, pos: QPoint) -> str | None:
        """The project a drop at `pos` moves chats into: "" outside every project, None
        where nothing can be dropped (search hits are not arranged by project)."""
        if self.model.searching:
            return None
        index = self.view.indexAt(pos)
        if not index.isValid():
            return ""
        if index.data(KIND_ROLE) in ("project", "session"):
            return str(index.data(PROJECT_ID_ROLE) or "")
        return ""  # a day header: among the chats outside every project

    def moving(self, chats: Sequence[str], target: str | None) -> list[str]:
        """Those of `chats` a drop on `target` would move (not those already there)."""
        if target is None:
            return []
        return [s for s in chats if self.model.session(s) is not None
                and self.model.project_of(s) != target]

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            assert isinstance(event, QDragMoveEvent)  # DragEnter's event is one too
            chats = read_chats(event.mimeData())
            if not chats:
                return False
            target = self.target_at(event.position().toPoint())
            moving = self.moving(chats, target)
            moves = bool(moving)
            self._highlight((target or None) if moves else None)
            self._say(self.hint(moving, target))
            # The list takes the drag as it enters wherever that is (a widget that refuses
            # the entry is sent no moves after it); each move then says whether a drop
            # there would change anything.
            if moves or (kind == QEvent.Type.DragEnter and target is not None):
                event.setDropAction(_move_if_allowed(event))
                event.accept()
            else:
                event.ignore()
            return True
        if kind == QEvent.Type.DragLeave:
            self._highlight(None)
            self._say("")
            return False
        if kind == QEvent.Type.Drop:
            assert isinstance(event, QDropEvent)
            chats = read_chats(event.mimeData())
            if not chats:
                return False
            self._highlight(None)
            self._say("")
            target = self.target_at(event.position().toPoint())
            moving = self.moving(chats, target)
            if not moving or target is None:
                event.ignore()
                return True
            event.setDropAction(_move_if_allowed(event))
            event.accept()
            self.chatsDropped.emit(moving, target)
            return True
        return False

    def hint(self, moving: Sequence[str], target: str | None) -> str:
        """What releasing the drag would do, for the status line."""
        if not moving or target is None:
            return ""
        if len(moving) == 1:
            found = self.model.session(moving[0])
            what = f"“{(found.title if found else '') or 'Untitled'}”"
        else:
            what = f"{len(moving)} chats"
        if target:
            name = dict(self.model.projects()).get(target, "")
            return f"Release to move {what} into “{name}”"
        whose = "its project" if len(moving) == 1 else "their projects"
        return f"Release to take {what} out of {whose}"

    def _say(self, text: str) -> None:
        if text != self._said:
            self._said = text
            self.hintChanged.emit(text)

    def _highlight(self, project_id: str | None) -> None:
        if self.delegate.drop_project != project_id:
            self.delegate.drop_project = project_id
            self.view.viewport().update()


def _move_if_allowed(event: QDropEvent) -> Qt.DropAction:
    """The chats move (the pointer says so) when the drag allows it."""
    if event.possibleActions() & Qt.DropAction.MoveAction:
        return Qt.DropAction.MoveAction
    return event.proposedAction()
