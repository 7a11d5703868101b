"""The chat list on the left: filled from the store, kept current after every change
(titles, running marks), rename, delete with undo, and search across every chat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

from ...core.clock import Clock
from ...core.model import GraphError, Session
from ...services.search import SearchService
from ...services.turns.chat_service import ChatService
from ...services.turns.sessions import SessionService, SessionView
from ...services.turns.turn_queue import TurnActivity
from ..shell.parts import WindowParts
from .wiring import ChatNavigator, Spawner


class SessionListController:
    """`opened` is to be called with each chat the window opens."""

    def __init__(
        self,
        nav: ChatNavigator,
        *,
        parts: WindowParts,
        search: SearchService,
        sessions: SessionService,
        chat_service: ChatService,
        tasks: Spawner,
        clock: Clock,
    ) -> None:
        self._nav = nav
        self._parts = parts
        self._search = search
        self._sessions = sessions
        self._chat_service = chat_service
        self._tasks = tasks
        self._clock = clock
        self._deleted: list[list[str]] = []  # each deletion's chats, the latest last
        listed = parts.sessions
        listed.sessionSelected.connect(nav.open_session)
        listed.hitSelected.connect(self.open_hit)
        listed.sessionActivated.connect(lambda _id: parts.composer.focus_input())
        listed.newChatRequested.connect(nav.new_chat)
        listed.renameRequested.connect(self.rename)
        listed.deleteRequested.connect(self.delete)
        listed.deleteManyRequested.connect(lambda chats: self.delete_chats(list(chats)))
        listed.searchRequested.connect(self.search)
        self._stop_following = chat_service.queue.subscribe(self._activity)

    def close(self) -> None:
        """Stop following the turns' activity (the window is going away)."""
        self._stop_following()

    def _activity(self, activity: Mapping[str, TurnActivity]) -> None:
        """Queued and replying chats in the list; the open chat's state in the status bar."""
        parts = self._parts
        parts.sessions.set_activity(activity)
        mine = activity.get(self._nav.current_session_id or "")
        if mine is not None:
            from ..sessions.model import activity_text, activity_tip  # loaded after paint

            parts.status(activity_tip(mine) if mine.queued else "Writing a reply…")
            # the reply's header says "queued · next" rather than "writing…" until it starts
            parts.chat.set_stream_waiting(activity_text(mine) if mine.queued else "")

    def opened(self, view: SessionView | None) -> None:
        """A chat opened while it waits for its server says so at once."""
        if view is None:
            return
        mine = self._chat_service.queue.activity().get(view.session.id)
        if mine is not None and mine.queued:
            from ..sessions.model import activity_tip

            self._parts.status(activity_tip(mine))

    async def reload(self) -> None:
        sessions = await self._sessions.list()
        self._parts.sessions.set_sessions(sessions, self._clock.now())
        current = self._nav.current_session_id
        if current:
            self._parts.sessions.select(current)

    async def refresh_session(self, session_id: str) -> Session | None:
        """Read the session's row again and show it (list entry, header if open)."""
        session = await self._sessions.get(session_id)
        if session is not None:
            self._parts.sessions.upsert(session, self._clock.now())
            view = self._nav.current_view
            if view is not None and view.session.id == session_id:
                head = view.session.head
                self._nav.update_header(replace(view, session=replace(session, head=head)))
        return session

    def rename(self, session_id: str, title: str) -> None:
        async def work() -> None:
            await self._sessions.rename(session_id, title)
            await self.refresh_session(session_id)

        self._tasks.spawn(work(), name="rename")

    def delete(self, session_id: str) -> None:
        """Hide the session; the banner offers to undo."""
        self.delete_chats([session_id])

    def delete_chats(self, chats: list[str]) -> None:
        """Hide the chats (the picked ones of the list); the banner's Undo brings them all
        back."""
        nav, parts, chat_service = self._nav, self._parts, self._chat_service

        async def work() -> None:
            titles = []
            gone: list[str] = []
            try:
                for session_id in chats:
                    if chat_service.is_running(session_id):
                        chat_service.stop(session_id)
                    session = parts.sessions.session(session_id)  # named before it leaves
                    titles.append(session.title if session is not None and session.title
                                  else "The chat")
                    await self._sessions.delete(session_id)
                    gone.append(session_id)
                    nav.forget_view(session_id)
                    parts.sessions.remove(session_id)
                    if nav.current_session_id == session_id:
                        nav.new_chat()
            finally:  # what was deleted can be undone, even when a later one failed
                if gone:
                    self._deleted.append(gone)
            if len(gone) == 1:
                title, text = "Chat deleted", f"“{titles[0]}” was removed from the list."
            else:
                named = ", ".join(f"“{t}”" for t in titles[:3]) + (
                    f" and {len(gone) - 3} more" if len(gone) > 3 else "")
                title, text = f"{len(gone)} chats deleted", f"{named} were removed from the list."
            parts.banner.show_notice(title, text, ("undo",), hide_after_ms=10_000)

        self._tasks.spawn(work(), name="delete")

    def undo_delete(self) -> None:
        if not self._deleted:
            return
        chats = self._deleted.pop()

        async def work() -> None:
            for session_id in chats:
                await self._sessions.restore(session_id)
                await self.refresh_session(session_id)
            self._parts.sessions.select(chats[0])
            await self._nav.load_session(chats[0])

        self._tasks.spawn(work(), name="undo-delete")

    def search(self, query: str) -> None:
        if not query:  # the field was cleared: the match a hit selected goes with it
            self._parts.chat.forget_revealed()
            return
        async def work() -> None:
            hits = await self._search.sessions(query)
            self._parts.sessions.show_results(query, [(h.session, h.snippet) for h in hits],
                                              [h.node_id for h in hits])

        self._tasks.spawn(work(), name="search")

    def open_hit(self, session_id: str, node_id: str) -> None:
        """Open a search hit at its message: the branch holding it is shown (HEAD moves to
        it only when it is not on the path already; display only, nothing runs), scrolled to
        the message with the first place it matches selected."""
        nav, parts = self._nav, self._parts
        needle = parts.sessions.query

        async def work() -> None:
            if self._chat_service.is_running(session_id):
                # a reply is being written on HEAD's branch: HEAD stays, the hit is shown
                # if that branch holds it
                if nav.current_session_id != session_id:
                    await nav.load_session(session_id)
                if (nav.current_session_id == session_id
                        and not parts.chat.reveal(node_id, _longest_word(needle))):
                    parts.status("That message is on another branch: it opens there once "
                                 "the reply is written.")
                return
            try:
                view = await self._sessions.show_branch_of(session_id, node_id)
            except GraphError as exc:  # the message went away since the search
                parts.status(str(exc))
                nav.open_session(session_id)
                return
            if nav.current_session_id == session_id:
                nav.show_updated(view)
            else:
                nav.forget_view(session_id)  # HEAD may have moved: read it afresh
                await nav.load_session(session_id)
            if nav.current_session_id == session_id:
                parts.chat.reveal(node_id, _longest_word(needle))

        self._tasks.spawn(work(), name="open-hit")


def _longest_word(query: str) -> str:
    """The word of a search to mark in the message (the index matches words in any order)."""
    words = query.split()
    return max(words, key=len) if words else ""
