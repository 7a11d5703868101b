"""What the window does for the person using it: open sessions, run turns and follow their
events, switch versions, edit, branch, pin, search, compact, pick models. It drives the
window's widgets and never blocks the GUI thread: every service call is awaited on the
qasync loop, and each view is redrawn from what the service returned."""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass, replace
from typing import Any

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtWidgets import QWidget

from ...core import dag
from ...core.model import GraphError, Node, Session
from ...core.occupancy import Occupancy
from ...services.bootstrap import SETTINGS_DEFAULT_MODEL, SETTINGS_WORKSPACE, Services
from ...services.events import (
    NodeAdded,
    OccupancyChanged,
    TextDelta,
    ToolCallStarted,
    TurnError,
    TurnEvent,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ...services.models import CLOUD_PROVIDERS, ModelChoice, ModelUnavailable
from ...services.sessions import SessionView
from ...store.search import search_sessions
from ..common.tasks import BackgroundTasks
from ..common.theme import ThemeManager
from ..composer.composer import Composer
from ..dialogs.context_breakdown import ContextBreakdownDialog
from ..dialogs.settings import SettingsDialog, SettingsValues
from ..occupancy.format import CompactionState, headline
from ..richtext.highlighting import warm_up_highlighting
from ..sessions.export_drop import ExportDropFilter
from ..sessions.list import SessionList
from ..shell.error_banner import ErrorBanner

log = logging.getLogger(__name__)

SETTINGS_SUMMARIZE = "compaction.summarize_trigger"
SETTINGS_EMERGENCY = "compaction.emergency_trigger"
SETTINGS_COMPOSER_DRAFTS = "composer.drafts"
VIEW_CACHE = 12  # sessions whose last view is kept to show at once when reopened


@dataclass
class WindowParts:
    """The widgets the controller drives; the window owns and lays them out."""

    window: QWidget
    sessions: SessionList
    chat: Any  # ChatView: set_view / append_stream_text / set_busy + action signals
    composer: Composer
    banner: ErrorBanner
    show_view: Callable[[SessionView | None], None]  # header, empty state
    status: Callable[[str], None]


def extend_view(view: SessionView, nodes: Sequence[Node], head: str | None) -> SessionView:
    """The view after `nodes` were written and HEAD moved, without asking the store."""
    graph = view.graph.with_nodes([n for n in nodes if n.id not in view.graph])
    head = head if head is not None and head in graph else view.head
    session = replace(view.session, head=head)
    return SessionView(session, graph, dag.active_path(graph, head), view.hidden, view.pinned)


def _differs(shown: SessionView, stored: SessionView) -> bool:
    """Whether the store has moved on from a view shown from memory."""
    return (
        shown.session != stored.session
        or len(shown.graph) != len(stored.graph)
        or shown.hidden != stored.hidden
        or shown.pinned != stored.pinned
    )


def apply_compaction_settings(services: Services, summarize: float, emergency: float) -> None:
    """The engine reads its thresholds from its config; swap in one with the user's."""
    engine = services.engine
    rules = replace(
        engine.config.rules, summarize_trigger=summarize, emergency_trigger=emergency
    )
    engine.config = replace(engine.config, rules=rules)


class ConversationController(QObject):
    """One per window. `current_view` and `occupancy` are what the widgets show right now."""

    sessionOpened = Signal(object)  # SessionView | None
    viewChanged = Signal(object)  # SessionView: what the window now shows of the session
    busyChanged = Signal(bool)
    occupancyUpdated = Signal(object)  # Occupancy | None
    turnFailed = Signal(object)  # TurnError
    turnFinished = Signal(str)  # session id
    themeChosen = Signal(str)

    def __init__(
        self,
        services: Services,
        parts: WindowParts,
        *,
        prefs: QSettings | None = None,
        theme: ThemeManager | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(parts.window)
        self.services = services
        self.chat_service = services.chat
        self.sessions = services.chat.sessions
        self.parts = parts
        self.prefs = prefs
        self.theme = theme
        self.clock = clock
        self.tasks = BackgroundTasks(on_error=self._task_failed)
        self.current_view: SessionView | None = None
        self.occupancy: Occupancy | None = None
        self.choices: list[ModelChoice] = []
        self.next_model: str | None = None  # the picker's choice before a session exists
        self._open_token = 0
        self._occupancy_token = 0
        self._pending: dict[str, str] = {}  # session -> text sent, kept until the reply lands
        self._preview_base: dict[str, SessionView] = {}  # the view before a shown preview
        self._drafts: dict[str, str] = {}  # session -> unsent composer text
        self._last_error: dict[str, TurnError] = {}
        self._turns: dict[str, asyncio.Task[Any]] = {}
        self._deleted: list[str] = []
        self._views: OrderedDict[str, SessionView] = OrderedDict()  # recently shown
        self._occupancies: dict[str, Occupancy] = {}  # the last record of each session
        self._context_dialog: ContextBreakdownDialog | None = None
        self._settings_dialog: SettingsDialog | None = None
        self._import_dialog: Any = None  # ImportDialog, made on first use
        self._export_drop = ExportDropFilter(self)
        self._export_drop.fileDropped.connect(self.open_import_dialog)
        self._export_drop.install(parts.sessions)
        self._compacting = False
        self._sending = False  # between Enter and the turn being registered
        # Staged attachments (chips) for the next send, by session id: set by the history panels.
        self.take_attachments: Callable[[str], Sequence[Any]] | None = None
        self._connect()

    # --- wiring --------------------------------------------------------------------

    def _connect(self) -> None:
        p = self.parts
        p.sessions.sessionSelected.connect(self.open_session)
        p.sessions.sessionActivated.connect(lambda _id: p.composer.focus_input())
        p.sessions.newChatRequested.connect(self.new_chat)
        p.sessions.renameRequested.connect(self.rename)
        p.sessions.deleteRequested.connect(self.delete)
        p.sessions.searchRequested.connect(self.search)
        p.composer.sendRequested.connect(self.send)
        p.composer.stopRequested.connect(self.stop)
        p.composer.commandRequested.connect(self.command)
        p.composer.modelChanged.connect(self.set_model)
        p.composer.contextRequested.connect(self.open_context_dialog)
        p.banner.actionTriggered.connect(self._banner_action)
        chat = p.chat
        for name, slot in (
            ("retryRequested", self.retry),
            ("editRequested", self.edit),
            ("branchRequested", self.branch),
            ("pinRequested", self.pin),
            ("versionRequested", self.switch_version),
            ("settingsRequested", self.open_settings),
            ("copyRequested", lambda _node_id: self.parts.status("Copied to the clipboard")),
        ):
            signal = getattr(chat, name, None)
            if signal is not None:
                signal.connect(slot)

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        return self.tasks.spawn(coro, name)

    def _task_failed(self, exc: BaseException) -> None:
        self.parts.banner.show_error(
            TurnError("internal", f"Something went wrong: {exc}", action="")
        )

    # --- start-up and shutdown -----------------------------------------------------

    async def start(self, open_session: str | None = None) -> None:
        """Fill the list and the model picker; open `open_session` or the last one."""
        self._load_drafts()
        await self.reload_sessions()
        await self.refresh_models()
        target = open_session
        if target is None and self.prefs is not None:
            saved = self.prefs.value("last_session", "")
            target = str(saved) if saved else None
        if target and self.parts.sessions.session(target) is not None:
            self.parts.sessions.select(target)
            await self._open(target)
        else:
            self._show(None)
        # the first code block on screen should not wait for pygments' lexers to be built
        self.spawn(asyncio.to_thread(warm_up_highlighting), name="warm-up-highlighting")

    async def close(self) -> None:
        """Stop turns (their streamed text is kept), save unsent text, cancel the rest."""
        self._stash_composer()
        for task in list(self._turns.values()):
            task.cancel()
        if self._turns:
            await asyncio.gather(*self._turns.values(), return_exceptions=True)
        await self.tasks.cancel_all()
        drafts = {k: v for k, v in self._drafts.items() if v.strip()}
        try:
            await self.services.store.run(
                lambda r: r.set_setting(SETTINGS_COMPOSER_DRAFTS, drafts)
            )
        except Exception:  # the store may already be unusable; nothing more to save then
            log.warning("could not save unsent text", exc_info=True)
        if self.prefs is not None:
            current = self.current_session_id
            self.prefs.setValue("last_session", current or "")

    def _load_drafts(self) -> None:
        try:
            saved = self.services.store.call(
                lambda r: r.get_setting(SETTINGS_COMPOSER_DRAFTS, {})
            )
        except Exception:
            saved = {}
        if isinstance(saved, dict):
            self._drafts = {str(k): str(v) for k, v in saved.items()}

    # --- sessions ------------------------------------------------------------------

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None

    async def reload_sessions(self) -> None:
        sessions = await self.sessions.list()
        self.parts.sessions.set_sessions(sessions, self.clock())
        if self.current_session_id:
            self.parts.sessions.select(self.current_session_id)

    def open_session(self, session_id: str) -> None:
        if session_id == self.current_session_id:
            return
        self.spawn(self._open(session_id), name="open-session")

    async def _open(self, session_id: str) -> None:
        self._open_token += 1
        token = self._open_token
        self.parts.chat.hold_background()
        cached = self._views.get(session_id)
        if cached is not None and not self.chat_service.is_running(session_id):
            # Back to a chat seen this run: show it at once, then check it against the store.
            self._present(cached)
            fresh = await self.sessions.view(session_id)
            if token != self._open_token:
                return
            if _differs(cached, fresh):
                self._redraw(fresh)
        else:
            view = await self.sessions.view(session_id)
            if token != self._open_token:
                return  # the user moved on while this loaded
            self._present(view)
        await self.refresh_occupancy()

    def _present(self, view: SessionView) -> None:
        """Make `view`'s session the open one: chat, composer text, banner, model."""
        session_id = view.session.id
        self._stash_composer()
        self.parts.banner.dismiss()
        self._show(view)
        self.parts.composer.set_text(self._drafts.pop(session_id, ""))
        error = self._last_error.get(session_id)
        if error is not None:
            self.parts.banner.show_error(error)
        model = view.session.model or self._default_model()
        self.parts.composer.select_model(model)

    def _remember(self, view: SessionView) -> None:
        self._views[view.session.id] = view
        self._views.move_to_end(view.session.id)
        while len(self._views) > VIEW_CACHE:
            self._views.popitem(last=False)

    def new_chat(self) -> None:
        """An empty chat: the session is created when its first message is sent."""
        self._open_token += 1
        self._stash_composer()
        self.parts.banner.dismiss()
        self.parts.sessions.select(None)
        self._show(None)
        self.parts.composer.set_text(self._drafts.pop("", ""))
        self.parts.composer.select_model(self.next_model or self._default_model())
        self.parts.composer.focus_input()

    def _stash_composer(self) -> None:
        key = self.current_session_id or ""
        text = self.parts.composer.text()
        if text.strip():
            self._drafts[key] = text
        else:
            self._drafts.pop(key, None)

    def _show(self, view: SessionView | None) -> None:
        """Make `view` what the window shows (None: the empty state of a new chat)."""
        previous = self.current_session_id
        self.current_view = view
        # The page first: a chat view shown only afterwards would lay its rows out twice,
        # at a stale width and again when it gets its size.
        self.parts.show_view(view)
        if view is not None:
            self._remember(view)
            self.parts.chat.set_view(view)
        running = view is not None and self.chat_service.is_running(view.session.id)
        self.parts.chat.set_busy(running)
        self.parts.composer.set_running(running)
        if view is None or view.session.id != previous:
            # the last record this session had (refreshed right after), never another's
            self._set_occupancy(None if view is None else self._occupancies.get(view.session.id))
        self.busyChanged.emit(running)
        self.sessionOpened.emit(view)

    def _redraw(self, view: SessionView) -> None:
        """New state of the session on screen (same session)."""
        self.current_view = view
        self._remember(view)
        self.parts.chat.set_view(view)
        self.parts.show_view(view)
        self.viewChanged.emit(view)

    def show_updated(self, view: SessionView) -> None:
        """Show a view a graph operation returned (checkout, hide) and re-estimate."""
        if self.current_session_id == view.session.id:
            self._redraw(view)
            self.spawn(self.refresh_occupancy(), name="occupancy")

    def run_external_turn(
        self, make: Callable[[Callable[[TurnEvent], None]], Coroutine[Any, Any, Any]]
    ) -> bool:
        """Run a turn started elsewhere (a merge from the history graph) like a send: it
        streams into the chat, fails into the banner and redraws at the end."""
        view = self.current_view
        if view is None or self.is_running():
            return False
        session_id = view.session.id
        self.parts.banner.dismiss()
        self.spawn(self._run_turn(session_id, make(self._sink(session_id))), name="graph-turn")
        return True

    def rename(self, session_id: str, title: str) -> None:
        async def work() -> None:
            await self.sessions.rename(session_id, title)
            await self._refresh_session(session_id)

        self.spawn(work(), name="rename")

    def delete(self, session_id: str) -> None:
        """Hide the session; the banner offers to undo."""

        async def work() -> None:
            if self.chat_service.is_running(session_id):
                self.chat_service.stop(session_id)
            await self.sessions.delete(session_id)
            self._views.pop(session_id, None)
            self.parts.sessions.remove(session_id)
            self._deleted.append(session_id)
            if self.current_session_id == session_id:
                self.new_chat()
            session = self.parts.sessions.session(session_id)
            title = session.title if session is not None else "The chat"
            self.parts.banner.show_notice(
                "Chat deleted", f"“{title}” was removed from the list.", ("undo",),
                hide_after_ms=10_000,
            )

        self.spawn(work(), name="delete")

    def undo_delete(self) -> None:
        if not self._deleted:
            return
        session_id = self._deleted.pop()

        async def work() -> None:
            await self.services.store.run(lambda r: r.update_session(session_id, hidden=False))
            await self._refresh_session(session_id)
            self.parts.sessions.select(session_id)
            await self._open(session_id)

        self.spawn(work(), name="undo-delete")

    async def _refresh_session(self, session_id: str) -> Session | None:
        session = await self.services.store.run(lambda r: r.get_session(session_id))
        if session is not None:
            self.parts.sessions.upsert(session, self.clock())
            if self.current_view is not None and self.current_view.session.id == session_id:
                view = replace(
                    self.current_view,
                    session=replace(session, head=self.current_view.session.head),
                )
                self.current_view = view
                self.parts.show_view(view)
        return session

    def search(self, query: str) -> None:
        if not query:
            return

        async def work() -> None:
            hits = await self.services.store.run(lambda r: search_sessions(r, query))
            self.parts.sessions.show_results(query, [(h.session, h.snippet) for h in hits])

        self.spawn(work(), name="search")

    # --- models --------------------------------------------------------------------

    def _default_model(self) -> str | None:
        """The default among the choices `refresh_models()` fetched: working it out afresh
        would read the keyring here, on the GUI thread."""
        try:
            return self.services.models.default_among(self.choices).id
        except ModelUnavailable:
            return self.services.models.default_model or None

    async def refresh_models(self) -> None:
        self.choices = await self.services.models.choices()
        current = (
            self.current_view.session.model if self.current_view is not None else None
        ) or self.next_model or self._default_model()
        self.parts.composer.set_models(self.choices, current)

    def set_model(self, model: str) -> None:
        view = self.current_view
        if view is None:
            self.next_model = model
            return

        async def work() -> None:
            await self.sessions.set_model(view.session.id, model)
            if self.current_view is not None and self.current_view.session.id == view.session.id:
                self.current_view = replace(
                    self.current_view, session=replace(self.current_view.session, model=model)
                )
                self.parts.show_view(self.current_view)
            await self.refresh_occupancy()

        self.spawn(work(), name="set-model")

    def selected_model(self) -> str | None:
        return self.parts.composer.current_model()

    # --- occupancy -----------------------------------------------------------------

    async def refresh_occupancy(self) -> None:
        view = self.current_view
        if view is None:
            self._set_occupancy(None)
            return
        self._occupancy_token += 1
        token = self._occupancy_token
        occ = await self.chat_service.occupancy(view.session.id, model=self.selected_model(),
                                                view=view)
        if token == self._occupancy_token and self.current_session_id == view.session.id:
            self._set_occupancy(occ)

    def _set_occupancy(self, occ: Occupancy | None) -> None:
        """The one place the record changes: the ring and the dialog get the same object."""
        self.occupancy = occ
        if occ is not None and self.current_session_id is not None:
            self._occupancies[self.current_session_id] = occ
        self.parts.composer.set_occupancy(occ)
        dialog = self._context_dialog
        if dialog is not None:
            dialog.set_occupancy(occ)
            if dialog.isVisible():
                self.spawn(self._refresh_compaction_state(), name="compaction-state")
        self.occupancyUpdated.emit(occ)

    def open_context_dialog(self) -> None:
        if self._context_dialog is None:
            dialog = ContextBreakdownDialog(self.parts.window)
            dialog.compactRequested.connect(self.compact)
            self._context_dialog = dialog
        dialog = self._context_dialog
        dialog.set_occupancy(self.occupancy)
        dialog.set_model_label(self._model_label())
        dialog.set_compacting(self._compacting)
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        self.spawn(self._refresh_compaction_state(), name="compaction-state")

    @property
    def context_dialog(self) -> ContextBreakdownDialog | None:
        return self._context_dialog

    def _model_label(self) -> str:
        model = self.selected_model()
        if not model:
            return ""
        for c in self.choices:
            if c.id == model:
                return f"{c.label} · {model}"
        return model

    async def _refresh_compaction_state(self) -> None:
        dialog = self._context_dialog
        view = self.current_view
        if dialog is None:
            return
        rules = self.services.engine.config.rules
        if view is None or view.head is None:
            dialog.set_compaction(CompactionState(
                trigger=rules.summarize_trigger, emergency=rules.emergency_trigger
            ))
            return
        commit = await self.services.engine.commit_for(view.session.id, view.head,
                                                       now=self.clock())
        dialog.set_compaction(CompactionState.from_states(
            (item.state for item in commit.items),
            trigger=rules.summarize_trigger,
            emergency=rules.emergency_trigger,
        ))
        dialog.set_model_label(self._model_label())

    def compact(self) -> None:
        view = self.current_view
        if view is None or self._compacting:
            return
        self._compacting = True
        if self._context_dialog is not None:
            self._context_dialog.set_compacting(True)

        async def work() -> None:
            before = self.occupancy
            try:
                occ = await self.chat_service.compact(view.session.id, model=self.selected_model())
            finally:
                self._compacting = False
                if self._context_dialog is not None:
                    self._context_dialog.set_compacting(False)
            if self.current_session_id == view.session.id:
                self._set_occupancy(occ)
                if before is not None and occ.total_used < before.total_used:
                    self.parts.status(f"Compacted: {headline(before)} → {headline(occ)}")
                else:
                    self.parts.status("Nothing to compact yet: every message still fits")

        self.spawn(work(), name="compact")

    def command(self, name: str) -> None:
        if name == "context":
            self.open_context_dialog()
        elif name == "compact":
            self.compact()

    # --- turns ---------------------------------------------------------------------

    def is_running(self) -> bool:
        sid = self.current_session_id
        return sid is not None and (sid in self._turns or self.chat_service.is_running(sid))

    def send(self, text: str) -> None:
        """Send what was typed. The field is emptied now and refilled if the turn fails
        before the model answered, so what was typed is never lost."""
        if not text.strip() or self.is_running() or self._sending:
            return
        self._sending = True
        self.parts.composer.clear_if(text)
        self.parts.banner.dismiss()
        self.spawn(self._send(text), name="send")

    async def _send(self, text: str) -> None:
        view = self.current_view
        model = self.selected_model()
        try:
            if view is None:
                session = await self.sessions.create(model=model or "")
                self.parts.sessions.upsert(session, self.clock())
                self.parts.sessions.select(session.id)
                view = await self.sessions.view(session.id)
                self._show(view)
            session_id = view.session.id
        except Exception as exc:
            self._sending = False
            self.parts.composer.restore(text)
            self.parts.banner.show_error(TurnError("internal", f"Could not start: {exc}"))
            return
        self._pending[session_id] = text
        self._last_error.pop(session_id, None)
        head = view.graph.find(view.head)
        unanswered = (
            head is not None and head.role == "user" and not view.graph.conversation_children(
                head.id)
        )
        sink = self._sink(session_id)
        if unanswered and head is not None and head.text == text.strip():
            # the same message again after a failure: answer it rather than repeat it
            run = self.chat_service.retry(session_id, head.id, model=model, on_event=sink)
        elif unanswered and head is not None:
            # a changed message after a failure replaces the unanswered one as a new version
            run = self.chat_service.edit(session_id, head.id, text.strip(), model=model,
                                         on_event=sink)
        else:
            self._preview(view, text)
            staged = self.take_attachments(session_id) if self.take_attachments else ()
            run = self.chat_service.send(session_id, text, model=model, attachments=staged,
                                         on_event=sink)
        await self._run_turn(session_id, run)

    def _preview(self, view: SessionView, text: str) -> None:
        """Show the message at once: it is committed before anything else happens, but the
        turn reports it only once the model is resolved (which can take a moment)."""
        last_seq = max((n.seq for n in view.graph), default=0)
        provisional = Node(
            id=f"pending-{view.session.id}", seq=last_seq + 1, created_at=self.clock(),
            session_id=view.session.id, role="user", output=text.strip(),
            predecessor=view.head,
        )
        self._preview_base[view.session.id] = view
        self._redraw(extend_view(view, [provisional], provisional.id))
        self._call_chat("begin_stream", provisional.id, self._label_for(self.selected_model()
                                                                        or ""))

    def retry(self, node_id: str | None = None) -> None:
        view = self.current_view
        if view is None or self.is_running():
            return
        target = node_id or self._retry_target(view)
        if target is None:
            return
        self.parts.banner.dismiss()
        session_id = view.session.id
        self._last_error.pop(session_id, None)
        run = self.chat_service.retry(session_id, target, model=self.selected_model(),
                                      on_event=self._sink(session_id))
        self.spawn(self._run_turn(session_id, run), name="retry")

    @staticmethod
    def _retry_target(view: SessionView) -> str | None:
        for node in reversed(view.path):
            if node.role in ("assistant", "user"):
                return node.id
        return None

    def edit(self, node_id: str, text: str) -> None:
        view = self.current_view
        if view is None or self.is_running() or not text.strip():
            return
        session_id = view.session.id
        self.parts.banner.dismiss()
        run = self.chat_service.edit(session_id, node_id, text.strip(),
                                     model=self.selected_model(),
                                     on_event=self._sink(session_id))
        self.spawn(self._run_turn(session_id, run), name="edit")

    def stop(self) -> None:
        sid = self.current_session_id
        if sid is not None:
            self.chat_service.stop(sid)

    async def _run_turn(self, session_id: str, run: Coroutine[Any, Any, Node | None]) -> None:
        task = asyncio.ensure_future(run)
        self._turns[session_id] = task
        self._sending = False
        self._set_running(session_id, True)
        try:
            await task
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            log.exception("turn failed")
            self._on_event(session_id, TurnFailed(session_id, TurnError(
                "internal", f"The reply could not be finished: {exc}", True, action="retry",
            ), None))
        finally:
            if self._turns.get(session_id) is task:
                del self._turns[session_id]
            self._set_running(session_id, False)
            self._pending.pop(session_id, None)
            self._preview_base.pop(session_id, None)
        await self._after_turn(session_id)

    def _set_running(self, session_id: str, running: bool) -> None:
        running = running or self.chat_service.is_running(session_id)
        self.parts.sessions.set_running(session_id, running)
        if session_id == self.current_session_id:
            self.parts.chat.set_busy(running)
            self.parts.composer.set_running(running)
            self.busyChanged.emit(running)

    async def _reload(self, session_id: str) -> None:
        view = await self.sessions.view(session_id)
        if self.current_session_id == session_id:
            self._redraw(view)

    async def _after_turn(self, session_id: str) -> None:
        """The store has the final word: redraw from it, and refresh the list entry."""
        await self._refresh_session(session_id)
        if self.current_session_id == session_id:
            view = await self.sessions.view(session_id)
            if self.current_session_id == session_id:
                self._redraw(view)
        else:
            self._views.pop(session_id, None)  # it moved on while it was not shown
        self.turnFinished.emit(session_id)

    def _sink(self, session_id: str) -> Callable[[TurnEvent], None]:
        return lambda event: self._on_event(session_id, event)

    def _on_event(self, session_id: str, event: TurnEvent) -> None:
        current = session_id == self.current_session_id
        view = self.current_view
        if isinstance(event, TurnStarted):
            base = self._preview_base.pop(session_id, None)
            view = base if base is not None and current else view
            if current and view is not None and event.user_node is not None:
                above = event.user_node.predecessor
                if above is not None and above not in view.graph:
                    # attach pointers were written just before the message: read them back
                    self.spawn(self._reload(session_id), name="reload")
                else:
                    self._redraw(extend_view(view, [event.user_node], event.user_node.id))
            if event.user_node is not None:
                self.spawn(self._refresh_session(session_id), name="title")
            if current:
                self._call_chat("begin_stream", event.parent_id, self._label_for(event.model))
                self.parts.status("Writing a reply…")
        elif isinstance(event, TextDelta):
            if current:
                self.parts.chat.append_stream_text(event.text)
        elif isinstance(event, ToolCallStarted):
            if current:
                self.parts.status(f"Running {event.name}…")
        elif isinstance(event, NodeAdded):
            if current and view is not None:
                node = event.node
                head = node.id if node.role != "tool" else view.head
                self._redraw(extend_view(view, [node], head))
        elif isinstance(event, OccupancyChanged):
            if current:
                self._set_occupancy(event.occupancy)
            elif event.occupancy is not None:
                self._occupancies[session_id] = event.occupancy
        elif isinstance(event, TurnFinished):
            if not current and event.occupancy is not None:
                self._occupancies[session_id] = event.occupancy
            self._pending.pop(session_id, None)
            if current and view is not None:
                self._call_chat("end_stream")
                self._redraw(extend_view(view, [event.node], event.node.id))
                if event.occupancy is not None:
                    self._set_occupancy(event.occupancy)
                self.parts.status("Reply stopped" if event.node.interrupted else "")
        elif isinstance(event, TurnFailed):
            self._failed(session_id, event)

    def _call_chat(self, name: str, *args: Any) -> None:
        """Optional parts of the chat view's interface (streaming bubble, inline error)."""
        method = getattr(self.parts.chat, name, None)
        if method is not None:
            method(*args)

    def _label_for(self, model: str) -> str:
        for c in self.choices:
            if c.id == model:
                return c.label
        return model

    def _failed(self, session_id: str, event: TurnFailed) -> None:
        error = event.error
        current = session_id == self.current_session_id
        base = self._preview_base.pop(session_id, None)
        if base is not None and current:
            self._redraw(base)  # the preview never became a message
        text = self._pending.pop(session_id, None)
        if error.kind != "busy":
            self._last_error[session_id] = error
        if current:
            self._call_chat("end_stream")
            view = self.current_view
            if view is not None and event.partial is not None:
                self._redraw(extend_view(view, [event.partial], event.partial.id))
            if text is not None and error.kind not in ("cancelled",):
                self.parts.composer.restore(text)
            self.parts.banner.show_error(error)
            self.parts.status("")
        elif text is not None:
            self._drafts[session_id] = text
        self.turnFailed.emit(error)

    def _banner_action(self, key: str) -> None:
        if key == "retry":
            self.retry()
        elif key == "settings":
            self.open_settings()
        elif key == "compact":
            self.compact()
        elif key == "undo":
            self.undo_delete()
        elif key == "new_chat":
            self.new_chat()

    # --- graph operations ----------------------------------------------------------

    def switch_version(self, node_id: str, index: int) -> None:
        """Show another version of a message: HEAD moves, nothing is sent."""
        view = self.current_view
        if view is None:
            return

        async def work() -> None:
            try:
                updated = await self.sessions.switch_version(view.session.id, node_id, index)
            except GraphError as exc:
                self.parts.status(str(exc))
                return
            if self.current_session_id == view.session.id:
                self._redraw(updated)
                await self.refresh_occupancy()

        self.spawn(work(), name="switch-version")

    def step_version(self, delta: int) -> None:
        """Alt+Left / Alt+Right: the previous or next version of the last message that has
        more than one."""
        view = self.current_view
        if view is None:
            return
        for node in reversed(view.path):
            if node.role == "tool":
                continue
            n, m = view.version(node.id)
            if m > 1:
                target = n + delta
                if 1 <= target <= m:
                    self.switch_version(node.id, target)
                return

    def branch(self, node_id: str) -> None:
        view = self.current_view
        if view is None:
            return

        async def work() -> None:
            session = await self.sessions.branch(view.session.id, node_id)
            self.parts.sessions.upsert(session, self.clock())
            self.parts.sessions.select(session.id)
            await self._open(session.id)
            self.parts.status(f"Branched into “{session.title}”")

        self.spawn(work(), name="branch")

    def pin(self, node_id: str, pinned: bool) -> None:
        view = self.current_view
        if view is None:
            return

        async def work() -> None:
            updated = await self.sessions.annotate(
                view.session.id, node_id, "pin" if pinned else "unpin"
            )
            if self.current_session_id == view.session.id:
                self._redraw(updated)
                await self.refresh_occupancy()

        self.spawn(work(), name="pin")

    # --- settings ------------------------------------------------------------------

    def current_settings(self) -> SettingsValues:
        rules = self.services.engine.config.rules
        workspace = self.services.chat.config.workspace
        return SettingsValues(
            default_model=self.services.models.default_model or self._default_model(),
            workspace=str(workspace) if workspace else None,
            summarize_trigger=rules.summarize_trigger,
            emergency_trigger=rules.emergency_trigger,
            theme=self.theme.mode if self.theme is not None else "system",
        )

    def open_settings(self) -> None:
        if self._settings_dialog is not None and self._settings_dialog.isVisible():
            self._settings_dialog.raise_()
            self._settings_dialog.activateWindow()
            return
        dialog = SettingsDialog(
            self.services.keys, CLOUD_PROVIDERS, self.choices, self.current_settings(),
            tasks=self.tasks, parent=self.parts.window,
        )
        dialog.saved.connect(self.apply_settings)
        dialog.keysChanged.connect(lambda: self.spawn(self.refresh_models(), name="models"))
        self._settings_dialog = dialog
        dialog.open()

    @property
    def settings_dialog(self) -> SettingsDialog | None:
        return self._settings_dialog

    # --- import --------------------------------------------------------------------

    def open_import_dialog(self, path: str | None = None) -> None:
        """File → Import…, or a dropped export file (`path`: start importing it at once)."""
        from ..dialogs.import_chats import ImportDialog

        dialog = self._import_dialog
        if dialog is None:
            dialog = ImportDialog(self.services.store, self.tasks, parent=self.parts.window)
            dialog.imported.connect(
                lambda _summary: self.spawn(self.reload_sessions(), name="sessions"))
            dialog.openRequested.connect(self._open_imported)
            self._import_dialog = dialog
        if not dialog.running:
            dialog.reset()
        dialog.show()
        dialog.raise_()
        dialog.activateWindow()
        if path:
            dialog.start_import(path)

    @property
    def import_dialog(self) -> Any:
        return self._import_dialog

    def _open_imported(self, session_id: str) -> None:
        self.parts.sessions.select(session_id)
        self.spawn(self._open(session_id), name="open-session")

    def apply_settings(self, values: SettingsValues) -> None:
        from pathlib import Path

        self.services.models.default_model = values.default_model
        self.services.chat.config.workspace = Path(values.workspace) if values.workspace else None
        apply_compaction_settings(self.services, values.summarize_trigger,
                                  values.emergency_trigger)
        if self.theme is not None and values.theme != self.theme.mode:
            self.theme.set_mode(values.theme)
        if self.prefs is not None:
            self.prefs.setValue("theme", values.theme)
        self.themeChosen.emit(values.theme)

        async def work() -> None:
            def save(repo: Any) -> None:
                repo.set_setting(SETTINGS_DEFAULT_MODEL, values.default_model)
                repo.set_setting(SETTINGS_WORKSPACE, values.workspace)
                repo.set_setting(SETTINGS_SUMMARIZE, values.summarize_trigger)
                repo.set_setting(SETTINGS_EMERGENCY, values.emergency_trigger)

            await self.services.store.run(save)
            await self.refresh_models()
            await self.refresh_occupancy()

        self.spawn(work(), name="save-settings")


def load_compaction_settings(services: Services) -> None:
    """Apply the thresholds saved in the store (if any) to the engine."""
    rules = services.engine.config.rules
    saved = services.store.call(lambda r: (
        r.get_setting(SETTINGS_SUMMARIZE), r.get_setting(SETTINGS_EMERGENCY)
    ))
    summarize = float(saved[0]) if isinstance(saved[0], int | float) else rules.summarize_trigger
    emergency = float(saved[1]) if isinstance(saved[1], int | float) else rules.emergency_trigger
    if (summarize, emergency) != (rules.summarize_trigger, rules.emergency_trigger):
        apply_compaction_settings(services, summarize, emergency)
