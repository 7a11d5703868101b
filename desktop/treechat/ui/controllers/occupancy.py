"""How full the context window is for the open chat: the one occupancy record the ring and
the /context dialog both show, its refresh after anything that changes it, and compaction
on request."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QWidget

from ...core.clock import Clock
from ...core.occupancy import Occupancy
from ...core.rules import foldable_items
from ...services.context import ContextEngine
from ...services.turns.chat_service import ChatService
from ...services.turns.sessions import SessionView
from ..composer.composer import Composer
from ..dialogs.context_breakdown import ContextBreakdownDialog
from ..occupancy.format import CompactionState, compaction_report
from .turn_views import is_pending
from .wiring import PickedModel, ShownChat, Spawner, StatusLine


class OccupancyController(QObject):
    """`updated` carries every new record (None: none yet); `pendingCounted` the tokens of
    what the box holds, for the Context tab."""

    updated = Signal(object)  # Occupancy | None
    pendingCounted = Signal(int)

    def __init__(
        self,
        chat: ShownChat,
        *,
        chat_service: ChatService,
        engine: ContextEngine,
        picker: PickedModel,
        composer: Composer,
        window: QWidget,
        status: StatusLine,
        tasks: Spawner,
        clock: Clock,
        staged_tokens: Callable[[], int],
    ) -> None:
        super().__init__(window)
        self._chat = chat
        self._chat_service = chat_service
        self._engine = engine
        self._picker = picker
        self._composer = composer
        self._window = window
        self._status = status
        self._tasks = tasks
        self._clock = clock
        self._staged_tokens = staged_tokens  # the files and attaches the box holds
        self.record: Occupancy | None = None
        self._token = 0
        self._by_session: dict[str, Occupancy] = {}  # the last record of each session
        self._dialog: ContextBreakdownDialog | None = None
        self._compacting = False
        self.pending = 0  # tokens of what the box holds: typed text and chips
        self._pending_token = 0
        composer.contextRequested.connect(self.open_dialog)
        # Typing is counted once it pauses, on a worker thread: a 2 MB paste never stalls.
        self._pending_timer = QTimer(composer)
        self._pending_timer.setSingleShot(True)
        self._pending_timer.setInterval(250)
        self._pending_timer.timeout.connect(self._count_pending)
        composer.input.textChanged.connect(self.pending_changed)

    async def refresh(self) -> None:
        view = self._chat.current_view
        if view is None:
            self.set(None)
            return
        if view.head is not None and is_pending(view.head):
            return  # a message not stored yet: its turn brings the record when it is
        self._token += 1
        token = self._token
        occ = await self._chat_service.occupancy(view.session.id,
                                                 model=self._picker.selected(), view=view)
        if token == self._token and self._chat.current_session_id == view.session.id:
            self.set(occ)

    # --- what the box holds ------------------------------------------------------------

    def pending_changed(self) -> None:
        """The typed text or a chip changed: recount what the next request would add."""
        self._pending_timer.start()

    def _count_pending(self) -> None:
        text = self._composer.text()
        command = text.strip() in ("/compact", "/context")
        staged = self._staged_tokens()
        self._pending_token += 1
        token = self._pending_token

        async def work() -> None:
            typed = 0
            if text.strip() and not command:
                typed = await asyncio.to_thread(self._engine.counter.count, text)
            total = typed + staged
            window = 0
            if self.record is None and total > 0:  # a new chat: the chosen model's window
                window = (await self._chat_service.model_endpoint(
                    self._picker.selected())).window
            if token == self._pending_token:
                self.set_pending(total, window)

        self._tasks.spawn(work(), name="pending-tokens")

    def set_pending(self, tokens: int, window: int = 0) -> None:
        """One figure for what the box holds, in the ring, the Context tab and /context
        (`window`: the chosen model's, for a new chat, which has no record yet)."""
        self.pending = tokens
        self._composer.ring.set_pending(tokens, window)
        self.pendingCounted.emit(tokens)
        if self._dialog is not None:
            self._dialog.set_pending(tokens)

    def show_last_of(self, session_id: str | None) -> None:
        """Show the last record `session_id` had (None for a new chat) until refreshed."""
        self.set(None if session_id is None else self._by_session.get(session_id))

    def remember(self, session_id: str, occ: Occupancy | None) -> None:
        """A record for a session not on screen: shown when it is opened again."""
        if occ is not None:
            self._by_session[session_id] = occ

    def from_turn(self, occ: Occupancy) -> None:
        """A running turn's record: shown only when it describes the head on screen. When
        the person has switched to another version meanwhile, the figure is read again for
        what they look at, never the other branch's request."""
        view = self._chat.current_view
        if view is not None and occ.head is not None and occ.head != view.head:
            self._tasks.spawn(self.refresh(), name="occupancy")
            return
        self.set(occ)

    def set(self, occ: Occupancy | None) -> None:
        """The one place the record changes: the ring and the dialog get the same object."""
        self.record = occ
        shown = self._chat.current_session_id
        if occ is not None and shown is not None:
            self._by_session[shown] = occ
        self._composer.set_occupancy(occ)
        if occ is None and self.pending > 0:
            self.pending_changed()  # a new chat counts what the box holds on its own
        dialog = self._dialog
        if dialog is not None:
            dialog.set_occupancy(occ)
            if dialog.isVisible():
                self._tasks.spawn(self._refresh_compaction_state(), name="compaction-state")
        self.updated.emit(occ)

    # --- the /context dialog ---------------------------------------------------------

    def open_dialog(self) -> None:
        if self._dialog is None:
            dialog = ContextBreakdownDialog(self._window)
            dialog.compactRequested.connect(self.compact)
            self._dialog = dialog
        dialog = self._dialog
        dialog.set_occupancy(self.record)
        dialog.set_pending(self.pending)
        dialog.set_model_label(self._picker.selected_label())
        dialog.set_compacting(self._compacting)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        self._tasks.spawn(self._refresh_compaction_state(), name="compaction-state")

    @property
    def context_dialog(self) -> ContextBreakdownDialog | None:
        return self._dialog

    async def _refresh_compaction_state(self) -> None:
        dialog = self._dialog
        view = self._chat.current_view
        if dialog is None:
            return
        engine = self._engine
        rules = engine.config.rules
        if view is None or view.head is None:
            dialog.set_compaction(CompactionState(
                trigger=rules.summarize_trigger, emergency=rules.emergency_trigger
            ))
            return
        commit = await engine.commit_for(view.session.id, view.head, now=self._clock.now())
        state = CompactionState.from_states(
            (item.state for item in commit.items),
            trigger=rules.summarize_trigger,
            emergency=rules.emergency_trigger,
        )
        cut = sum(1 for item in commit.items if item.live and item.reason == "per_item_cap")
        # "every message is sent in full" only when nothing was cut either
        dialog.set_compaction(replace(state, cut=cut))
        dialog.set_model_label(await self._picker.context_label())

    # --- compaction ------------------------------------------------------------------

    def compact(self) -> None:
        view = self._chat.current_view
        if view is None or self._compacting:
            return
        self._set_compacting(True)

        async def work() -> None:
            before = await self._state_of(view)
            try:
                occ: Occupancy = await self._chat_service.compact(
                    view.session.id, model=self._picker.selected())
                after = await self._state_of(view)
            finally:
                self._set_compacting(False)
            if self._chat.current_session_id == view.session.id:
                self.set(occ)
                self._status(compaction_report(
                    before, after, keep_recent=self._engine.config.rules.keep_recent_turns))

        self._tasks.spawn(work(), name="compact")

    async def _state_of(self, view: SessionView) -> CompactionState:
        """How compacted the head's commit is now (what the /context dialog says)."""
        if view.head is None:
            return CompactionState()
        engine = self._engine
        commit = await engine.commit_for(view.session.id, view.head, now=self._clock.now())
        state = CompactionState.from_states(item.state for item in commit.items)
        count, size = foldable_items(commit, engine.config.rules, frozenset(view.pinned))
        return replace(state, foldable=count, foldable_tokens=size)

    def _set_compacting(self, running: bool) -> None:
        self._compacting = running
        if self._dialog is not None:
            self._dialog.set_compacting(running)
