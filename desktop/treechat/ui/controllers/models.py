"""The model picker: the choices the services offer, the default among them, and the model
of the open chat (or of the next new chat)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import replace

from ...core.model import GraphError
from ...services.models.catalog import Endpoint, ModelCatalog, ModelChoice, ModelUnavailable
from ...services.turns.changes import TurnChanges
from ...services.turns.sessions import SessionService
from ..composer.composer import Composer
from .wiring import ChatScreen, Refresh, Spawner


class ModelsController:
    def __init__(
        self,
        catalog: ModelCatalog,
        *,
        chat: ChatScreen,
        composer: Composer,
        sessions: SessionService,
        endpoint: Callable[[str | None], Awaitable[Endpoint]],
        tasks: Spawner,
        refresh_occupancy: Refresh,
    ) -> None:
        self._catalog = catalog
        self._chat = chat
        self._composer = composer
        self._sessions = sessions
        self._endpoint = endpoint  # the model's server and window, as a turn would use it
        self._tasks = tasks
        self._refresh_occupancy = refresh_occupancy
        self.choices: list[ModelChoice] = []
        self.next_model: str | None = None  # the picker's choice before a session exists
        self._refreshing: asyncio.Task[None] | None = None
        self._again = False  # a change came while the list was being read
        self._closed = False
        self._since = catalog.connections.clock.now()  # replies before it say nothing now
        self._noted: set[str] = set()  # chats whose turn's changes named its reply already
        composer.modelChanged.connect(self.set_model)
        composer.picker.refreshRequested.connect(self.refresh_servers)
        # Connections added, edited or removed, and local servers found or gone (the
        # detector's probe runs in the background): the picker reads the groups again.
        self._catalog.connections.add_listener(self.connections_changed)

    def default_model(self) -> str | None:
        """The default among the choices `refresh()` fetched: working it out afresh would
        read the keyring here, on the GUI thread."""
        try:
            return self._catalog.default_among(self.choices).id
        except ModelUnavailable:
            return self._catalog.default_model or None

    def connections_changed(self) -> None:
        """Called on the GUI loop when the connections change; coalesced while a read of the
        groups is under way."""
        if self._closed:
            return
        if self._refreshing is not None and not self._refreshing.done():
            self._again = True
            return
        self._refreshing = self._tasks.spawn(self._refresh_until_settled(), name="models")

    async def _refresh_until_settled(self) -> None:
        while True:
            self._again = False
            await self.refresh()
            if not self._again or self._closed:
                return

    def reply_answered(self, changes: TurnChanges) -> None:
        """A turn's changes, as the window draws them: when its newest reply has text, the
        connection it came through answered (read from them, not from the chat again)."""
        self._noted.add(changes.session_id)
        replies = [n for n in changes.nodes if n.role == "assistant" and n.output]
        newest = replies[-1] if replies else None
        if newest is not None and newest.created_at >= self._since:
            self._catalog.connections.note_answered(str(newest.metadata.get("model", "")),
                                                    newest.created_at)

    def reply_finished(self, session_id: str) -> None:
        """A turn of `session_id` ended: when its newest reply has text, the connection it
        came through answered, and the picker and Settings say it is reachable. A turn whose
        changes said so already (`reply_answered`) is not read again."""
        if session_id in self._noted:
            self._noted.discard(session_id)
            return

        async def work() -> None:
            try:
                view = await self._sessions.view(session_id)
            except GraphError:  # deleted meanwhile: nothing to learn from it
                return
            replies = [n for n in view.graph.nodes.values()
                       if n.role == "assistant" and n.output]
            newest = max(replies, key=lambda n: n.seq, default=None)
            if newest is not None and newest.created_at >= self._since:  # not an old reply
                self._catalog.connections.note_answered(str(newest.metadata.get("model", "")),
                                                        newest.created_at)

        self._tasks.spawn(work(), name="reply-reached")

    def refresh_servers(self) -> None:
        """The picker's Refresh: every server connection listed again, the local ports
        probed, then the picker filled."""
        picker = self._composer.picker

        async def work() -> None:
            picker.set_refreshing(True)
            try:
                await self._catalog.refresh()
                await self.refresh()
            finally:
                picker.set_refreshing(False)

        self._tasks.spawn(work(), name="models-refresh")

    def close(self) -> None:
        self._closed = True

    async def refresh(self) -> None:
        groups = await self._catalog.groups()
        self.choices = [choice for group in groups for choice in group.models]
        shown = self._chat.current_view
        current = (
            shown.session.model if shown is not None else None
        ) or self.next_model or self.default_model()
        self._composer.set_models(self.choices, current)

    def set_model(self, model: str) -> None:
        chat = self._chat
        view = chat.current_view
        if view is None:
            self.next_model = model
            return

        async def work() -> None:
            await self._sessions.set_model(view.session.id, model)
            shown = chat.current_view
            if shown is not None and shown.session.id == view.session.id:
                chat.update_header(replace(shown, session=replace(shown.session, model=model)))
            await self._refresh_occupancy()

        self._tasks.spawn(work(), name="set-model")

    def selected(self) -> str | None:
        return self._composer.current_model()

    async def chosen(self) -> str | None:
        """The picker's model; when it names none yet (its list is still on its way), the
        list is read first: no message goes out without a model named."""
        if self.selected() is None:
            await self.refresh()
        return self.selected()

    def label_for(self, model: str) -> str:
        """The picker's name for `model` (the id itself when it is not a choice)."""
        for choice in self.choices:
            if choice.id == model:
                return choice.label
        return self._catalog.display_name(model) if model else model

    def is_local(self, model: str | None) -> bool:
        """Whether `model` runs on this machine (its requests are free, not unpriced)."""
        if not model:
            return False
        for choice in self.choices:
            if choice.id == model:
                return choice.local
        return self._catalog.is_local(model)

    async def context_label(self) -> str:
        """`selected_label()` with the model's window, marked "estimated" when neither its
        server nor litellm knows it (the fallback window is assumed), for the /context
        dialog."""
        label = self.selected_label()
        try:
            endpoint = await self._endpoint(self.selected())
        except ModelUnavailable:
            return label
        window = f"{endpoint.window:,}-token window"
        if endpoint.window_estimated:
            window += " (estimated: the server does not report it)"
        return f"{label} · {window}" if label else window

    def selected_label(self) -> str:
        """The picked model's one display name (the picker's and the headers'), for the
        context and parameters dialogs."""
        model = self.selected()
        return self.label_for(model) if model else ""
