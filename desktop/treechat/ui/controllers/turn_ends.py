"""How a finished turn reaches the window: drawn from what it changed (the nodes it wrote,
HEAD, the session's row for the header and the chat list, its usage rows for the costs), and
the session read again only where those changes cannot be applied."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...core.clock import Clock
from ...core.model import Node
from ...services.turns.changes import TurnChanges
from ...services.turns.sessions import SessionService, SessionView
from ..sessions.list import SessionList
from .ports import SessionRows, ShownChat
from .turn_views import PENDING_PREFIX, applied_view, extend_view


class TurnEnds:
    """Keeps each running turn's changes from its last event to its end. `moved_away`
    says whether the user went to another branch of the chat while its turn ran;
    `applied` hears each turn's complete changes as they come (before the redraw they
    bring, when the chat is shown)."""

    def __init__(self, *, shown: ShownChat, sessions: SessionService, rows: SessionRows,
                 session_list: SessionList, clock: Clock,
                 moved_away: Callable[[str, SessionView | None], bool],
                 applied: Callable[[TurnChanges], None]) -> None:
        self._shown = shown
        self._sessions = sessions
        self._rows = rows
        self._list = session_list
        self._clock = clock
        self._moved_away = moved_away
        self._applied_to = applied
        # session -> what its finished turn changed, when complete: the window redraws from
        # it and never reads the session again
        self._changes: dict[str, TurnChanges] = {}

    def take(self, session_id: str, changes: TurnChanges | None) -> bool:
        """Keep a turn's changes for its end when they are complete (True); else its end
        reads the session."""
        if changes is None or not changes.complete:
            return False
        self._changes[session_id] = changes
        self._applied_to(changes)  # shown or not: the costs, the picker's reachability
        return True

    def draw(self, session_id: str, view: SessionView, nodes: Sequence[Node],
             head: str | None, changes: TurnChanges | None) -> None:
        """Redraw the open chat from what its turn changed: every node it wrote, HEAD
        (unless the user went to another branch meanwhile) and the session's row. Without
        complete changes, `nodes` and `head` as the event told them (the end reads the
        rest)."""
        away = self._moved_away(session_id, view)
        if f"{PENDING_PREFIX}{session_id}" in view.graph:
            # the message shown before the store had it is still on screen (its read-back
            # is on its way): the changes have nothing to replace it with, the end reads
            self._changes.pop(session_id, None)
        elif changes is not None and changes.complete:
            self._shown.redraw(applied_view(view, changes, keep_head=away))
            return
        self._shown.redraw(extend_view(view, nodes, view.head if away else head))

    async def finish(self, session_id: str) -> None:
        """The store has the turn's final word: the list row from its changes, and a read
        only where they cannot be applied."""
        changes = self._changes.pop(session_id, None)
        if changes is None or changes.session is None:
            # The turn ended without a complete account of what it wrote (an error the
            # service did not report, a read-back that failed): the store says what is.
            await self._reload(session_id)
            return
        self._list.upsert(changes.session, self._clock.now())
        if self._shown.current_session_id != session_id:
            self._shown.forget_view(session_id)  # drawn while not shown: read it afresh
            return
        shown = self._shown.current_view
        if shown is not None and shown.head is not None and self._moved_away(session_id,
                                                                            shown):
            # The user checked out another branch while the reply ran: the reply landed on
            # its own branch and HEAD in the store followed it; HEAD goes back to where the
            # user went (a write that brings the session back with it).
            view = await self._sessions.checkout(session_id, shown.head)
            if self._shown.current_session_id == session_id:
                self._shown.redraw(view)

    async def _reload(self, session_id: str) -> None:
        await self._rows.refresh_session(session_id)
        if self._shown.current_session_id != session_id:
            self._shown.forget_view(session_id)
            return
        shown = self._shown.current_view.head if self._shown.current_view is not None else None
        view = await self._sessions.view(session_id)
        if (shown is not None and shown in view.graph
                and all(node.id != shown for node in view.path)):
            # the user checked out another branch while the reply ran: the reply landed
            # on its own branch, and the view stays where the user went
            view = await self._sessions.checkout(session_id, shown)
        if self._shown.current_session_id == session_id:
            self._shown.redraw(view)
