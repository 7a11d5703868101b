"""The session list as an item model: pinned chats, then each project with its chats under its
header (folded or not), then the other sessions newest first under day headers; or search hits
with a snippet of the matching message. One row per entry, painted by the delegate."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import (
    QAbstractListModel,
    QModelIndex,
    QObject,
    QPersistentModelIndex,
    Qt,
    Signal,
)

from ...core.model import Session
from .roles import (
    ACTIVITY_ROLE,
    COLLAPSED_ROLE,
    FORKED_ROLE,
    KIND_ROLE,
    PROJECT_ID_ROLE,
    RUNNING_ROLE,
    SESSION_ID_ROLE,
    SNIPPET_ROLE,
    UPDATED_ROLE,
)

if TYPE_CHECKING:  # named only: the queue (and asyncio) is not needed for the first frame
    from ...services.turns.turn_queue import TurnActivity

__all__ = [
    "ACTIVITY_ROLE",
    "FORKED_ROLE",
    "KIND_ROLE",
    "RUNNING_ROLE",
    "SESSION_ID_ROLE",
    "SNIPPET_ROLE",
    "UPDATED_ROLE",
    "SessionListModel",
    "activity_text",
    "day_label",
    "group_by_day",
]

Index = QModelIndex | QPersistentModelIndex



@dataclass(frozen=True, slots=True)
class Header:
    label: str


@dataclass(frozen=True, slots=True)
class ProjectHeader:
    project_id: str
    name: str
    chats: int
    collapsed: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    session: Session
    snippet: str = ""
    hit_node: str | None = None  # a search hit's matching message
    project_id: str = ""  # the project the row sits under ("" for none)


Row = Header | ProjectHeader | Entry


def day_label(when: float, now: float) -> str:
    """A day as people say it: Today, Yesterday, a weekday within the week, else a date."""
    day = dt.datetime.fromtimestamp(when).date()
    today = dt.datetime.fromtimestamp(now).date()
    delta = (today - day).days
    if delta <= 0:
        return "Today"
    if delta == 1:
        return "Yesterday"
    if delta < 7:
        return day.strftime("%A")
    if day.year == today.year:
        return f"{day.day} {day.strftime('%B')}"
    return f"{day.day} {day.strftime('%B')} {day.year}"


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th … 11th, 12th, 13th … 21st."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def activity_text(activity: TurnActivity | None) -> str:
    """A chat's turn as its row says it: "queued · next", "queued · 3rd", "replying…"."""
    if activity is None:
        return ""
    if activity.queued:
        return "queued · next" if activity.place == 1 else f"queued · {ordinal(activity.place)}"
    return "replying…"


def activity_tip(activity: TurnActivity) -> str:
    where = (f"the model server on this machine ({activity.server})" if activity.local
             else activity.server)
    if not activity.queued:
        return f"A reply is being written by {where}."
    ahead = activity.place - 1 + activity.capacity
    pace = ("answers one chat at a time" if activity.capacity == 1
            else f"answers {activity.capacity} chats at a time")
    return (f"Waiting for its turn: {where} {pace}; "
            f"{ahead} chat{'s' if ahead != 1 else ''} before this one.")


def group_by_day(sessions: Sequence[Session], now: float) -> list[Row]:
    """Sessions newest first with a header before each day's first one."""
    rows: list[Row] = []
    last: str | None = None
    for s in sorted(sessions, key=lambda s: (-(s.updated_at or s.created_at), s.id)):
        label = day_label(s.updated_at or s.created_at, now)
        if label != last:
            rows.append(Header(label))
            last = label
        rows.append(Entry(s))
    return rows


class SessionListModel(QAbstractListModel):
    """Rows for the session list. Headers are neither selectable nor enabled, so keyboard
    navigation steps over them."""

    renameRequested = Signal(str, str)  # session id, new title

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._sessions: dict[str, Session] = {}
        self._rows: list[Row] = []
        self._row_of: dict[str, int] = {}
        self._searching = False
        self._running: set[str] = set()
        self._activity: dict[str, TurnActivity] = {}
        self._held = False  # the pointer is over the list: rows stay where they are
        self._moved = False  # a session changed place while held
        self._now = 0.0
        self._pinned: frozenset[str] = frozenset()
        self._only: frozenset[str] | None = None  # the favourites filter, when on
        self._favourites: frozenset[str] = frozenset()
        self._projects: tuple[tuple[str, str], ...] = ()  # (id, name), in the order shown
        self._member_of: dict[str, str] = {}  # session -> project
        self._collapsed: set[str] = set()

    def set_projects(self, projects: Sequence[tuple[str, str]],
                     member_of: Mapping[str, str]) -> None:
        """Projects (id, name) shown under their headers with their chats, before the rest."""
        self._projects = tuple(projects)
        known = {pid for pid, _ in self._projects}
        self._member_of = {s: p for s, p in member_of.items() if p in known}
        self._collapsed &= known
        if not self._searching:
            self._reset(self._grouped())

    def project_of(self, session_id: str) -> str:
        return self._member_of.get(session_id, "")

    def projects(self) -> tuple[tuple[str, str], ...]:
        return self._projects

    def toggle_project(self, project_id: str) -> None:
        """Fold a project's chats away under its header, or show them again."""
        self._collapsed ^= {project_id}
        if not self._searching:
            self._reset(self._grouped())

    def project_index(self, project_id: str) -> QModelIndex:
        for i, row in enumerate(self._rows):
            if isinstance(row, ProjectHeader) and row.project_id == project_id:
                return self.index(i)
        return QModelIndex()

    def set_marks(self, pinned: frozenset[str], only: frozenset[str] | None = None,
                  favourites: frozenset[str] = frozenset()) -> None:
        """Pinned chats go first under their own header; favourites are starred; `only`,
        when given, is the set of chats to show (the favourites filter)."""
        self._pinned, self._only, self._favourites = pinned, only, favourites
        if not self._searching:
            self._reset(self._grouped())

    def is_pinned(self, session_id: str) -> bool:
        return session_id in self._pinned

    def _grouped(self) -> list[Row]:
        shown = [s for s in self._sessions.values()
                 if self._only is None or s.id in self._only]
        pinned = [s for s in shown if s.id in self._pinned]
        rows: list[Row] = []
        if pinned:
            rows.append(Header("Pinned"))
            rows.extend(Entry(s) for s in sorted(
                pinned, key=lambda s: (-(s.updated_at or s.created_at), s.id)))
        rest = [s for s in shown if s.id not in self._pinned]
        for pid, name in self._projects:
            mine = sorted((s for s in rest if self._member_of.get(s.id) == pid),
                          key=lambda s: (-(s.updated_at or s.created_at), s.id))
            folded = pid in self._collapsed
            rows.append(ProjectHeader(pid, name, len(mine), folded))
            if not folded:
                rows.extend(Entry(s, project_id=pid) for s in mine)
        rest = [s for s in rest if s.id not in self._member_of]
        return rows + group_by_day(rest, self._now)

    # --- contents ------------------------------------------------------------------

    @property
    def searching(self) -> bool:
        return self._searching

    def set_sessions(self, sessions: Sequence[Session], now: float) -> None:
        """Show every session, grouped by day (leaves search mode)."""
        self._sessions = {s.id: s for s in sessions}
        self._now = now
        self._searching = False
        self._reset(self._grouped())

    def set_results(self, hits: Sequence[tuple[Session, str]],
                    nodes: Sequence[str | None] = ()) -> None:
        """Show search hits (session, snippet) in the order given, without headers;
        `nodes`, when given, are the matching messages, one per hit."""
        self._searching = True
        found = list(nodes) + [None] * (len(hits) - len(nodes))
        self._reset([Entry(s, snippet, node) for (s, snippet), node in zip(hits, found,
                                                                           strict=False)])

    def show_all(self, now: float | None = None) -> None:
        if now is not None:
            self._now = now
        self._searching = False
        self._reset(self._grouped())

    def upsert(self, session: Session, now: float | None = None) -> None:
        """Add or refresh one session; it moves to where its new time puts it."""
        if now is not None:
            self._now = now
        old = self._sessions.get(session.id)
        self._sessions[session.id] = session
        row = self._row_of.get(session.id)
        if session.hidden:
            self.remove(session.id)
            return
        if self._searching:
            if row is not None:
                current = self._rows[row]
                assert isinstance(current, Entry)
                self._rows[row] = replace(current, session=session)
                idx = self.index(row)
                self.dataChanged.emit(idx, idx)
            return
        same_place = (
            old is not None
            and row is not None
            and (old.updated_at or old.created_at) == (session.updated_at or session.created_at)
        )
        if self._held and row is not None and old is not None:
            same_place = True  # moved when the pointer leaves, not under it
            self._moved = True
        if same_place:
            assert row is not None
            current = self._rows[row]
            self._rows[row] = (replace(current, session=session) if isinstance(current, Entry)
                               else Entry(session))
            idx = self.index(row)
            self.dataChanged.emit(idx, idx)
            return
        self._reset(self._grouped())

    def hold_order(self, held: bool) -> bool:
        """Keep rows in place while the pointer is over the list (a click must open the chat
        it was aimed at); on release, True if the order changed meanwhile and was applied."""
        self._held = held
        if held or not self._moved:
            return False
        self._moved = False
        if self._searching:
            return False
        self._reset(self._grouped())
        return True

    def remove(self, session_id: str) -> None:
        self._sessions.pop(session_id, None)
        if session_id not in self._row_of:
            return
        if self._searching:
            row = self._row_of[session_id]
            self.beginRemoveRows(QModelIndex(), row, row)
            del self._rows[row]
            self._reindex()
            self.endRemoveRows()
            return
        self._reset(self._grouped())

    def set_running(self, session_id: str, running: bool) -> None:
        if running:
            self._running.add(session_id)
        else:
            self._running.discard(session_id)
        row = self._row_of.get(session_id)
        if row is not None:
            idx = self.index(row)
            self.dataChanged.emit(idx, idx, [RUNNING_ROLE])

    def set_activity(self, activity: Mapping[str, TurnActivity]) -> None:
        """Which chats are queued for their server and which are being answered; only
        rows whose words change are redrawn (the order never moves for this)."""
        before, self._activity = self._activity, dict(activity)
        for session_id in before.keys() | self._activity.keys():
            if activity_text(before.get(session_id)) == activity_text(
                    self._activity.get(session_id)):
                continue
            row = self._row_of.get(session_id)
            if row is not None:
                idx = self.index(row)
                self.dataChanged.emit(idx, idx, [ACTIVITY_ROLE, Qt.ItemDataRole.ToolTipRole])

    def activity_of(self, session_id: str) -> TurnActivity | None:
        return self._activity.get(session_id)

    def session(self, session_id: str) -> Session | None:
        return self._sessions.get(session_id)

    def session_count(self) -> int:
        return len(self._sessions)

    def index_of(self, session_id: str) -> QModelIndex:
        row = self._row_of.get(session_id)
        return QModelIndex() if row is None else self.index(row)

    def hit_node(self, index: Index) -> str | None:
        """The message a search hit matched in (None for a title match or no hit)."""
        if not self._searching or not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        return row.hit_node if isinstance(row, Entry) else None

    def session_at(self, index: Index) -> Session | None:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        return row.session if isinstance(row, Entry) else None

    def first_session_index(self) -> QModelIndex:
        for i, row in enumerate(self._rows):
            if isinstance(row, Entry):
                return self.index(i)
        return QModelIndex()

    def last_session_index(self) -> QModelIndex:
        for i in range(len(self._rows) - 1, -1, -1):
            if isinstance(self._rows[i], Entry):
                return self.index(i)
        return QModelIndex()

    def _reset(self, rows: list[Row]) -> None:
        self.beginResetModel()
        self._rows = rows
        self._reindex()
        self.endResetModel()

    def _reindex(self) -> None:
        self._row_of = {
            row.session.id: i for i, row in enumerate(self._rows) if isinstance(row, Entry)
        }

    # --- QAbstractListModel --------------------------------------------------------

    def rowCount(self, parent: Index = QModelIndex()) -> int:  # noqa: B008
        return 0 if parent.isValid() else len(self._rows)

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid() or not 0 <= index.row() < len(self._rows):
            return None
        row = self._rows[index.row()]
        if isinstance(row, ProjectHeader):
            return self._project_data(row, role)
        if isinstance(row, Header):
            if role == Qt.ItemDataRole.DisplayRole:
                return row.label
            if role == KIND_ROLE:
                return "header"
            if role == Qt.ItemDataRole.AccessibleTextRole:
                return f"{row.label} section"
            return None
        s = row.session
        if role == Qt.ItemDataRole.DisplayRole and s.id in self._favourites:
            return f"★ {s.title or 'Untitled'}"
        if role in (Qt.ItemDataRole.DisplayRole, Qt.ItemDataRole.EditRole):
            return s.title or "Untitled"
        if role == KIND_ROLE:
            return "session"
        if role == SESSION_ID_ROLE:
            return s.id
        if role == SNIPPET_ROLE:
            return row.snippet
        if role == PROJECT_ID_ROLE:
            return row.project_id
        if role == FORKED_ROLE:
            return s.forked_from is not None
        if role == UPDATED_ROLE:
            return s.updated_at or s.created_at
        if role == RUNNING_ROLE:
            return s.id in self._running
        if role == ACTIVITY_ROLE:
            return activity_text(self._activity.get(s.id))
        if role == Qt.ItemDataRole.ToolTipRole:
            when = dt.datetime.fromtimestamp(s.updated_at or s.created_at)
            busy = self._activity.get(s.id)
            return f"{s.title}\nLast active {when:%Y-%m-%d %H:%M}" + (
                f"\n{activity_tip(busy)}" if busy is not None else "")
        if role == Qt.ItemDataRole.AccessibleTextRole:
            doing = activity_text(self._activity.get(s.id))
            return s.title + (f", {doing}" if doing else "") + (
                f", matches: {row.snippet}" if row.snippet else "")
        return None

    @staticmethod
    def _project_data(row: ProjectHeader, role: int) -> Any:
        if role == Qt.ItemDataRole.DisplayRole:
            return row.name
        if role == KIND_ROLE:
            return "project"
        if role == PROJECT_ID_ROLE:
            return row.project_id
        if role == COLLAPSED_ROLE:
            return row.collapsed
        if role == SNIPPET_ROLE:
            return f"{row.chats}"
        chats = f"{row.chats} chat{'s' if row.chats != 1 else ''}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return (f"Project “{row.name}”: {chats}. Click to "
                    f"{'show' if row.collapsed else 'fold'} them; drag chats here to move "
                    "them in; right-click for its instructions, knowledge and memory.")
        if role == Qt.ItemDataRole.AccessibleTextRole:
            return f"Project {row.name}, {chats}" + (", folded" if row.collapsed else "")
        return None

    def flags(self, index: Index) -> Qt.ItemFlag:
        if not index.isValid():
            return Qt.ItemFlag.NoItemFlags
        if isinstance(self._rows[index.row()], ProjectHeader):
            # clicked (to fold) and dropped on (a chat moves in), never current
            return Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsDropEnabled
        if isinstance(self._rows[index.row()], Header):
            return Qt.ItemFlag.NoItemFlags
        return (
            Qt.ItemFlag.ItemIsEnabled
            | Qt.ItemFlag.ItemIsSelectable
            | Qt.ItemFlag.ItemIsEditable
            | Qt.ItemFlag.ItemNeverHasChildren
        )

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        session = self.session_at(index)
        if session is None or role != Qt.ItemDataRole.EditRole:
            return False
        title = " ".join(str(value).split())
        if not title or title == session.title:
            return False
        renamed = replace(session, title=title)
        self._sessions[session.id] = renamed
        row = self._rows[index.row()]
        assert isinstance(row, Entry)
        self._rows[index.row()] = replace(row, session=renamed)
        self.dataChanged.emit(index, index)
        self.renameRequested.emit(session.id, title)
        return True
