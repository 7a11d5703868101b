"""How full the context window is for the open chat: the one occupancy record the ring and
the /context dialog both show, its refresh after anything that changes it, and compaction
on request."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from ...core.occupancy import Occupancy
from ...core.rules import foldable_items
from ...services.turns.sessions import SessionView
from ..dialogs.context_breakdown import ContextBreakdownDialog
from ..occupancy.format import CompactionState, compaction_report

if TYPE_CHECKING:
    from .conversation import ConversationController


class OccupancyController:
    def __init__(self, conversation: ConversationController) -> None:
        self._c = conversation
        self.record: Occupancy | None = None
        self._token = 0
        self._by_session: dict[str, Occupancy] = {}  # the last record of each session
        self._dialog: ContextBreakdownDialog | None = None
        self._compacting = False
        self.pending = 0  # tokens of what the box holds: typed text and chips
        self._pending_token = 0
        composer = conversation.parts.composer
        composer.contextRequested.connect(self.open_dialog)
        # Typing is counted once it pauses, on a worker thread: a 2 MB paste never stalls.
        self._pending_timer = QTimer(composer)
        self._pending_timer.setSingleShot(True)
        self._pending_timer.setInterval(250)
        self._pending_timer.timeout.connect(self._count_pending)
        composer.input.textChanged.connect(self.pending_changed)

    async def refresh(self) -> None:
        c = self._c
        view = c.current_view
        if view is None:
            self.set(None)
            return
        self._token += 1
        token = self._token
        occ = await c.chat_service.occupancy(view.session.id, model=c.models.selected(),
                                             view=view)
        if token == self._token and c.current_session_id == view.session.id:
            self.set(occ)

    # --- what the box holds ------------------------------------------------------------

    def pending_changed(self) -> None:
        """The typed text or a chip changed: recount what the next request would add."""
        self._pending_timer.start()

    def _count_pending(self) -> None:
        c = self._c
        text = c.parts.composer.text()
        command = text.strip() in ("/compact", "/context")
        files = sum(s.tokens or 0 for s in c.attachments.current())
        attaches = sum(s.tokens for s in c.history.staged_for(c.current_session_id))
        self._pending_token += 1
        token = self._pending_token

        async def work() -> None:
            typed = 0
            if text.strip() and not command:
                typed = await asyncio.to_thread(c.services.engine.counter.count, text)
            total = typed + files + attaches
            window = 0
            if self.record is None and total > 0:  # a new chat: the chosen model's window
                window = (await c.chat_service.model_endpoint(c.models.selected())).window
            if token == self._pending_token:
                self.set_pending(total, window)

        c.spawn(work(), name="pending-tokens")

    def set_pending(self, tokens: int, window: int = 0) -> None:
        """One figure for what the box holds, in the ring, the Context tab and /context
        (`window`: the chosen model's, for a new chat, which has no record yet)."""
        c = self._c
        self.pending = tokens
        c.parts.composer.ring.set_pending(tokens, window)
        c.history.timeline.set_pending(tokens)
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
        view = self._c.current_view
        if view is not None and occ.head is not None and occ.head != view.head:
            self._c.spawn(self.refresh(), name="occupancy")
            return
        self.set(occ)

    def set(self, occ: Occupancy | None) -> None:
        """The one place the record changes: the ring and the dialog get the same object."""
        c = self._c
        self.record = occ
        if occ is not None and c.current_session_id is not None:
            self._by_session[c.current_session_id] = occ
        c.parts.composer.set_occupancy(occ)
        if occ is None and self.pending > 0:
            self.pending_changed()  # a new chat counts what the box holds on its own
        dialog = self._dialog
        if dialog is not None:
            dialog.set_occupancy(occ)
            if dialog.isVisible():
                c.spawn(self._refresh_compaction_state(), name="compaction-state")
        c.occupancyUpdated.emit(occ)

    # --- the /context dialog ---------------------------------------------------------

    def open_dialog(self) -> None:
        c = self._c
        if self._dialog is None:
            dialog = ContextBreakdownDialog(c.parts.window)
            dialog.compactRequested.connect(self.compact)
            self._dialog = dialog
        dialog = self._dialog
        dialog.set_occupancy(self.record)
        dialog.set_pending(self.pending)
        dialog.set_model_label(c.models.selected_label())
        dialog.set_compacting(self._compacting)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        c.spawn(self._refresh_compaction_state(), name="compaction-state")

    @property
    def context_dialog(self) -> ContextBreakdownDialog | None:
        return self._dialog

    async def _refresh_compaction_state(self) -> None:
        c = self._c
        dialog = self._dialog
        view = c.current_view
        if dialog is None:
            return
        engine = c.services.engine
        rules = engine.config.rules
        if view is None or view.head is None:
            dialog.set_compaction(CompactionState(
                trigger=rules.summarize_trigger, emergency=rules.emergency_trigger
            ))
            return
        commit = await engine.commit_for(view.session.id, view.head, now=c.clock.now())
        state = CompactionState.from_states(
            (item.state for item in commit.items),
            trigger=rules.summarize_trigger,
            emergency=rules.emergency_trigger,
        )
        cut = sum(1 for item in commit.items if item.live and item.reason == "per_item_cap")
        # "every message is sent in full" only when nothing was cut either
        dialog.set_compaction(replace(state, cut=cut))
        dialog.set_model_label(await c.models.context_label())

    # --- compaction ------------------------------------------------------------------

    def compact(self) -> None:
        c = self._c
        view = c.current_view
        if view is None or self._compacting:
            return
        self._set_compacting(True)

        async def work() -> None:
            before = await self._state_of(view)
            try:
                occ: Occupancy = await c.chat_service.compact(view.session.id,
                                                              model=c.models.selected())
                after = await self._state_of(view)
            finally:
                self._set_compacting(False)
            if c.current_session_id == view.session.id:
                self.set(occ)
                c.parts.status(compaction_report(
                    before, after, keep_recent=c.services.engine.config.rules.keep_recent_turns))

        c.spawn(work(), name="compact")

    async def _state_of(self, view: SessionView) -> CompactionState:
        """How compacted the head's commit is now (what the /context dialog says)."""
        if view.head is None:
            return CompactionState()
        c = self._c
        engine = c.services.engine
        commit = await engine.commit_for(view.session.id, view.head, now=c.clock.now())
        state = CompactionState.from_states(item.state for item in commit.items)
        count, size = foldable_items(commit, engine.config.rules, frozenset(view.pinned))
        return replace(state, foldable=count, foldable_tokens=size)

    def _set_compacting(self, running: bool) -> None:
        self._compacting = running
        if self._dialog is not None:
            self._dialog.set_compacting(running)
