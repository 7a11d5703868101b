"""The session the window shows right now (or a new chat): opened from memory or the store,
kept on screen from what the services return, with each chat's unsent text and last failure.
Opening a chat never blocks the GUI thread: the store is read on the qasync loop."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Protocol

from PySide6.QtCore import QObject, Signal

from ...services.models.catalog import ModelChoice
from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionService, SessionView
from ..shell.parts import WindowParts
from .wiring import Spawner

VIEW_CACHE = 12  # sessions whose last view is kept to show at once when reopened


def differs(shown: SessionView, stored: SessionView) -> bool:
    """Whether the store has moved on from a view shown from memory."""
    return (
        shown.session != stored.session
        or len(shown.graph) != len(stored.graph)
        or shown.hidden != stored.hidden
        or shown.pinned != stored.pinned
    )


class ModelDefaults(Protocol):
    """What opening a chat asks of the model picker: the model a chat without one gets."""

    next_model: str | None  # the picker's choice before a session exists

    @property
    def choices(self) -> Sequence[ModelChoice]: ...

    def default_model(self) -> str | None: ...

    def label_for(self, model: str) -> str: ...


class LastRecord(Protocol):
    """The occupancy as opening a chat shows it: its last record, then a fresh estimate."""

    def show_last_of(self, session_id: str | None) -> None: ...

    async def refresh(self) -> None: ...


class OpenSession(QObject):
    """`current_view` is what the widgets show right now. `models` and `occupancy` are set
    by the window's wiring once those controllers exist (they read the open chat too)."""

    sessionOpened = Signal(object)  # SessionView | None
    viewChanged = Signal(object)  # SessionView: what the window now shows of the session
    busyChanged = Signal(bool)

    models: ModelDefaults
    occupancy: LastRecord

    def __init__(self, parts: WindowParts, sessions: SessionService,
                 is_running: Callable[[str], bool], tasks: Spawner) -> None:
        super().__init__(parts.window)
        self.parts = parts
        self.sessions = sessions
        self._is_running = is_running
        self._tasks = tasks
        self.current_view: SessionView | None = None
        self.drafts: dict[str, str] = {}  # session -> unsent composer text ("" = new chat)
        self.last_errors: dict[str, TurnError] = {}  # the failure each session last showed
        self._open_token = 0
        self._views: OrderedDict[str, SessionView] = OrderedDict()  # recently shown

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None

    def open_session(self, session_id: str) -> None:
        if session_id == self.current_session_id:
            return
        self._tasks.spawn(self.load_session(session_id), name="open-session")

    async def load_session(
        self, session_id: str, *, unless: Callable[[], bool] | None = None
    ) -> None:
        """Make `session_id` the open session: from memory at once if it was shown this run
        (then checked against the store), else from the store; not if `unless()` says the
        user moved on while it was read."""
        self._open_token += 1
        token = self._open_token
        self.parts.chat.hold_background()
        cached = self._views.get(session_id)
        if cached is not None and not self._is_running(session_id):
            self._present(cached)
            fresh = await self.sessions.view(session_id)
            if token != self._open_token:
                return
            if differs(cached, fresh):
                self.redraw(fresh)
        else:
            # a long chat shows its end first, read on its own; the whole path follows (at
            # once when the window already shows the chat: its first frame had its end)
            shown = self.parts.chat.model.view
            if shown is not None and shown.session.id == session_id:
                view = await self.sessions.view(session_id)
            else:
                view = await self.sessions.tail_view(session_id)
            if token != self._open_token or (unless is not None and unless()):
                return  # the user moved on while this loaded
            self._present(view)
            if view.is_tail:
                whole = await self.sessions.view(session_id)
                if token != self._open_token:
                    return
                # a turn started meanwhile draws from what is shown: that stays (the chat is
                # read whole when opened next, as an end alone is never kept to reopen)
                if not self._is_running(session_id):
                    self.redraw(whole)
        await self.occupancy.refresh()

    def _present(self, view: SessionView) -> None:
        """Make `view`'s session the open one: chat, composer text, banner, model."""
        session_id = view.session.id
        self.stash_composer()
        self.parts.banner.dismiss()
        self.show(view)
        self.parts.composer.set_text(self.drafts.pop(session_id, ""))
        error = self.last_errors.get(session_id)
        if error is not None:
            self.parts.banner.show_error(error)
        model = view.session.model or self.models.default_model()
        if not self.models.choices and model:  # the list is still on its way: name it
            self.parts.composer.name_model(model, self.models.label_for(model))
        self.parts.composer.select_model(model)

    def new_chat(self) -> None:
        """An empty chat: the session is created when its first message is sent."""
        self._open_token += 1
        self.stash_composer()
        self.parts.banner.dismiss()
        self.parts.sessions.select(None)
        self.show(None)
        self.parts.composer.set_text(self.drafts.pop("", ""))
        self.models.next_model = None  # a new chat starts on the default model (Settings)
        self.parts.composer.select_model(self.models.default_model())
        self.parts.composer.focus_input()

    def stash_composer(self) -> None:
        key = self.current_session_id or ""
        text = self.parts.composer.text()
        if text.strip():
            self.drafts[key] = text
        else:
            self.drafts.pop(key, None)

    def show(self, view: SessionView | None) -> None:
        """Make `view` what the window shows (None: the empty state of a new chat)."""
        previous = self.current_session_id
        self.current_view = view
        # The page first: a chat view shown only afterwards would lay its rows out twice,
        # at a stale width and again when it gets its size.
        self.parts.show_view(view)
        if view is not None:
            self._remember(view)
            self.parts.chat.set_view(view)
        running = view is not None and self._is_running(view.session.id)
        self.parts.chat.set_busy(running)
        self.parts.composer.set_running(running)
        if view is None or view.session.id != previous:
            # the last record this session had (refreshed right after), never another's
            self.occupancy.show_last_of(None if view is None else view.session.id)
        self.busyChanged.emit(running)
        self.sessionOpened.emit(view)

    def redraw(self, view: SessionView) -> None:
        """New state of the session on screen (same session)."""
        self.current_view = view
        self._remember(view)
        self.parts.chat.set_view(view)
        self.parts.show_view(view)
        self.viewChanged.emit(view)

    def show_updated(self, view: SessionView) -> None:
        """Show a view a graph operation returned (checkout, hide) and re-estimate."""
        if self.current_session_id == view.session.id:
            self.redraw(view)
            self._tasks.spawn(self.occupancy.refresh(), name="occupancy")

    def update_header(self, view: SessionView) -> None:
        """The session's row changed (title, model): same nodes, new header."""
        self.current_view = view
        self.parts.show_view(view)

    def forget_view(self, session_id: str) -> None:
        """The session moved on while it was not shown: reopening reads it afresh."""
        self._views.pop(session_id, None)

    def _remember(self, view: SessionView) -> None:
        if view.is_tail:
            return  # only the end of the chat: reopening reads it again
        self._views[view.session.id] = view
        self._views.move_to_end(view.session.id)
        while len(self._views) > VIEW_CACHE:
            self._views.popitem(last=False)
