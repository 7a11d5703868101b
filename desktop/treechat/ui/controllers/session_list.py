"""The chat list on the left: filled from the store, kept current after every change
(titles, running marks), rename, delete with undo, and search across every chat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING

from ...core.model import GraphError, Session
from ...services.search import SearchService
from ...services.turns.sessions import SessionView
from ...services.turns.turn_queue import TurnActivity

if TYPE_CHECKING:
    from .conversation import ConversationController


class SessionListController:
    def __init__(self, conversation: ConversationController, search: SearchService) -> None:
        self._c = conversation
        self._search = search
        self._deleted: list[str] = []
        sessions = conversation.parts.sessions
        sessions.sessionSelected.connect(conversation.open_session)
        sessions.hitSelected.connect(self.open_hit)
        sessions.sessionActivated.connect(lambda _id: conversation.parts.composer.focus_input())
        sessions.newChatRequested.connect(conversation.new_chat)
        sessions.renameRequested.connect(self.rename)
        sessions.deleteRequested.connect(self.delete)
        sessions.searchRequested.connect(self.search)
        self._stop_following = conversation.chat_service.queue.subscribe(self._activity)
        conversation.sessionOpened.connect(self._opened)

    def close(self) -> None:
        """Stop following the turns' activity (the window is going away)."""
        self._stop_following()

    def _activity(self, activity: Mapping[str, TurnActivity]) -> None:
        """Queued and replying chats in the list; the open chat's state in the status bar."""
        c = self._c
        c.parts.sessions.set_activity(activity)
        mine = activity.get(c.current_session_id or "")
        if mine is not None:
            from ..sessions.model import activity_text, activity_tip  # loaded after paint

            c.parts.status(activity_tip(mine) if mine.queued else "Writing a reply…")
            # the reply's header says "queued · next" rather than "writing…" until it starts
            c.parts.chat.set_stream_waiting(activity_text(mine) if mine.queued else "")

    def _opened(self, view: SessionView | None) -> None:
        """A chat opened while it waits for its server says so at once."""
        if view is None:
            return
        mine = self._c.chat_service.queue.activity().get(view.session.id)
        if mine is not None and mine.queued:
            from ..sessions.model import activity_tip

            self._c.parts.status(activity_tip(mine))

    async def reload(self) -> None:
        c = self._c
        sessions = await c.sessions.list()
        c.parts.sessions.set_sessions(sessions, c.clock.now())
        if c.current_session_id:
            c.parts.sessions.select(c.current_session_id)

    async def refresh_session(self, session_id: str) -> Session | None:
        """Read the session's row again and show it (list entry, header if open)."""
        c = self._c
        session = await c.sessions.get(session_id)
        if session is not None:
            c.parts.sessions.upsert(session, c.clock.now())
            view = c.current_view
            if view is not None and view.session.id == session_id:
                c.update_header(replace(view, session=replace(session, head=view.session.head)))
        return session

    def rename(self, session_id: str, title: str) -> None:
        c = self._c

        async def work() -> None:
            await c.sessions.rename(session_id, title)
            await self.refresh_session(session_id)

        c.spawn(work(), name="rename")

    def delete(self, session_id: str) -> None:
        """Hide the session; the banner offers to undo."""
        c = self._c

        async def work() -> None:
            if c.chat_service.is_running(session_id):
                c.chat_service.stop(session_id)
            session = c.parts.sessions.session(session_id)  # named before it leaves the list
            title = session.title if session is not None and session.title else "The chat"
            await c.sessions.delete(session_id)
            c.forget_view(session_id)
            c.parts.sessions.remove(session_id)
            self._deleted.append(session_id)
            if c.current_session_id == session_id:
                c.new_chat()
            c.parts.banner.show_notice(
                "Chat deleted", f"“{title}” was removed from the list.", ("undo",),
                hide_after_ms=10_000,
            )

        c.spawn(work(), name="delete")

    def undo_delete(self) -> None:
        if not self._deleted:
            return
        c = self._c
        session_id = self._deleted.pop()

        async def work() -> None:
            await c.sessions.restore(session_id)
            await self.refresh_session(session_id)
            c.parts.sessions.select(session_id)
            await c.load_session(session_id)

        c.spawn(work(), name="undo-delete")

    def search(self, query: str) -> None:
        if not query:
            return
        c = self._c

        async def work() -> None:
            hits = await self._search.sessions(query)
            c.parts.sessions.show_results(query, [(h.session, h.snippet) for h in hits],
                                          [h.node_id for h in hits])

        c.spawn(work(), name="search")

    def open_hit(self, session_id: str, node_id: str) -> None:
        """Open a search hit at its message: the branch holding it is shown (HEAD moves to
        it only when it is not on the path already; display only, nothing runs), scrolled to
        the message with the first place it matches selected."""
        c = self._c
        needle = c.parts.sessions.query

        async def work() -> None:
            if c.chat_service.is_running(session_id):
                # a reply is being written on HEAD's branch: HEAD stays, the hit is shown
                # if that branch holds it
                if c.current_session_id != session_id:
                    await c.load_session(session_id)
                if (c.current_session_id == session_id
                        and not c.parts.chat.reveal(node_id, _longest_word(needle))):
                    c.parts.status("That message is on another branch: it opens there once "
                                   "the reply is written.")
                return
            try:
                view = await c.sessions.show_branch_of(session_id, node_id)
            except GraphError as exc:  # the message went away since the search
                c.parts.status(str(exc))
                c.open_session(session_id)
                return
            if c.current_session_id == session_id:
                c.show_updated(view)
            else:
                c.forget_view(session_id)  # HEAD may have moved: read it afresh
                await c.load_session(session_id)
            if c.current_session_id == session_id:
                c.parts.chat.reveal(node_id, _longest_word(needle))

        c.spawn(work(), name="open-hit")


def _longest_word(query: str) -> str:
    """The word of a search to mark in the message (the index matches words in any order)."""
    words = query.split()
    return max(words, key=len) if words else ""
