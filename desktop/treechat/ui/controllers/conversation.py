"""Where the window's controllers are built and wired together: each is handed only the
collaborators it uses (the open session, the status line, the task spawner, one service),
and the signals that let siblings follow each other are connected here, with the start-up
and shutdown order. Nothing here blocks the GUI thread: every service call is awaited on
the qasync loop."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QSettings, Signal

from ...core.clock import Clock
from ...services.bootstrap import Services
from ...services.search import SearchService
from ..common.tasks import BackgroundTasks
from ..common.theme import ThemeManager
from ..richtext.highlighting import warm_up_highlighting
from ..shell.outline import LAST_MODEL, LAST_MODEL_LABEL, LAST_SESSION
from ..shell.parts import WindowParts
from .artifacts import ArtifactsController
from .attachments import AttachmentsController
from .bundled_note import BundledModelNote
from .dialogs import DialogsController
from .graph_ops import GraphOperations
from .history import HistoryPanels
from .mcp import McpController
from .models import ModelsController
from .occupancy import OccupancyController
from .open_session import VIEW_CACHE, OpenSession, differs
from .projects import ProjectsController
from .session_list import SessionListController
from .sync import SyncController
from .turns import TurnController

if TYPE_CHECKING:
    from .backups import BackupsController
    from .beam import BeamController

log = logging.getLogger(__name__)

__all__ = ["VIEW_CACHE", "ConversationController", "differs"]


class ConversationController(OpenSession):
    """One per window: the open session (`current_view` is what the widgets show right
    now) and the controllers that act on it, each handed only what it uses."""

    occupancyUpdated = Signal(object)  # Occupancy | None
    turnFailed = Signal(object)  # TurnError
    turnFinished = Signal(str)  # session id
    turnApplied = Signal(object)  # TurnChanges: a turn's complete changes, as they come
    themeChosen = Signal(str)

    models: ModelsController
    occupancy: OccupancyController

    def __init__(
        self,
        services: Services,
        parts: WindowParts,
        *,
        prefs: QSettings | None = None,
        theme: ThemeManager | None = None,
        clock: Clock | None = None,
        search: SearchService,
    ) -> None:
        tasks = BackgroundTasks(on_error=self._task_failed)
        chat = services.chat
        super().__init__(parts, chat.sessions, chat.is_running, tasks)
        self.tasks = tasks
        self.services = services
        self.chat_service = chat
        self.preferences = services.preferences
        self.prefs = prefs
        self.theme = theme
        self.clock: Clock = clock if clock is not None else services.clock
        status, sessions = parts.status, chat.sessions
        self.models = ModelsController(
            services.models, chat=self, composer=parts.composer, sessions=sessions,
            endpoint=chat.model_endpoint, tasks=tasks,
            refresh_occupancy=self._refresh_occupancy)
        parts.set_model_namer(self.models.label_for)  # one name per model, everywhere
        self.occupancy = OccupancyController(
            self, chat_service=chat, engine=services.engine, picker=self.models,
            composer=parts.composer, window=parts.window, status=status, tasks=tasks,
            clock=self.clock, staged_tokens=self._staged_tokens)
        self.occupancy.updated.connect(self.occupancyUpdated)
        self.session_list = SessionListController(
            self, parts=parts, search=search, sessions=sessions, chat_service=chat,
            tasks=tasks, clock=self.clock)
        self.sessionOpened.connect(self.session_list.opened)
        self.projects = ProjectsController(chat, parts=parts, tasks=tasks, status=status)
        self.sessionOpened.connect(self.projects.chat_opened)
        self.turns = TurnController(
            self, chat=chat, shown=self, models=self.models, rows=self.session_list,
            tasks=self, clock=self.clock, composer=parts.composer, banner=parts.banner,
            chat_view=parts.chat, session_list=parts.sessions, status=status)
        self.turns.busyChanged.connect(self.busyChanged)
        self.turns.turnFinished.connect(self.turnFinished)
        self.turns.turnApplied.connect(self.turnApplied)
        self.turns.turnFailed.connect(self.turnFailed)
        self.turns.occupancyShown.connect(self.occupancy.from_turn)
        self.turns.occupancyKept.connect(self.occupancy.remember)
        self.graph_ops = GraphOperations(
            self, chat=parts.chat, listed=parts.sessions, sessions=sessions,
            occupancy=self.occupancy, status=status, tasks=tasks, clock=self.clock)
        self.dialogs = DialogsController(self)
        # a reply that came through an added server shows it reachable in the picker
        self.turnApplied.connect(self.models.reply_answered)  # (heard before turnFinished)
        self.turnFinished.connect(self.models.reply_finished)
        self.history = HistoryPanels(
            self, parts=parts, chat_service=chat, sessions=sessions, engine=services.engine,
            tasks=tasks, clock=self.clock, pending_changed=self.occupancy.pending_changed,
            selected_model=self.models.selected, run_turn=self.turns.run_external)
        self._wire_history()
        self.attachments = AttachmentsController(  # files in a message
            self, chat_service=chat, chat=self, models=self.models, tasks=self,
            composer=parts.composer, chat_view=parts.chat, banner=parts.banner,
            window=parts.window)
        self.sessionOpened.connect(self.attachments.chat_opened)
        self.attachments.filesChanged.connect(self.occupancy.pending_changed)
        self.attachments.sendRequested.connect(self.turns.send)
        self.turns.take_files_from(self.attachments.take, self.attachments.preflight,
                                   self.attachments.has_files)
        self.bundled_note = BundledModelNote(self, catalog=services.models,
                                             banner=parts.banner, prefs=prefs)
        self.turnFinished.connect(self.bundled_note.turn_finished)
        self.mcp = McpController(
            services.mcp, chat=self, tasks=self, status=status, composer=parts.composer,
            session_list=parts.sessions, window=parts.window)
        self.sessionOpened.connect(self.mcp.chat_opened)
        self.sync = SyncController(  # in the background, once started
            services.sync, parent=self, chat=self, sessions=sessions,
            is_running=chat.is_running, reload_list=self.session_list.reload, status=status,
            tasks=tasks)
        if services.sync is not None:
            self.turnFinished.connect(self.sync.changed)
            self.viewChanged.connect(self.sync.changed)
        self.artifacts = ArtifactsController(self, window=parts.window, status=status)
        parts.chat.menuRequested.connect(self.artifacts.reply_menu)  # save or open
        self.backups: BackupsController | None = None  # with the window's menus
        self.beam: BeamController | None = None  # several models at once, with the menus
        parts.composer.commandRequested.connect(self.command)
        parts.banner.actionTriggered.connect(self._banner_action)

    def _wire_history(self) -> None:
        """The graph and the Context tab follow the open chat; their gestures reach the
        controllers that carry them out."""
        history = self.history
        self.sessionOpened.connect(history.show_view)
        self.viewChanged.connect(history.show_view)
        self.busyChanged.connect(history.graph.set_busy)
        self.occupancyUpdated.connect(history.occupancy_updated)
        self.turns.take_attachments_from(history.take_attachments)
        graph = history.graph.view
        graph.retryRequested.connect(self.turns.retry)
        graph.branchRequested.connect(self.graph_ops.branch)
        graph.pinRequested.connect(self.graph_ops.pin)
        history.editAccepted.connect(self.turns.edit)
        self.occupancy.pendingCounted.connect(history.timeline.set_pending)

    async def _refresh_occupancy(self) -> None:
        await self.occupancy.refresh()  # (built after the picker, which reads it)

    def _staged_tokens(self) -> int:
        """What the box holds besides the typed text: its files and its attaches."""
        files = sum(s.tokens or 0 for s in self.attachments.current())
        return files + sum(s.tokens for s in self.history.staged_for(self.current_session_id))

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        return self.tasks.spawn(coro, name)

    def _task_failed(self, exc: BaseException) -> None:
        # A refresh behind the scenes (the Context tab, the ring, the graph) is not the turn:
        # its failure is logged and said in the status line, never as a failed reply.
        self.parts.status(f"Something went wrong in the background: {exc} (details in the log)")

    # --- start-up and shutdown -----------------------------------------------------

    async def start(self, open_session: str | None = None) -> None:
        """Fill the list and the model picker; open `open_session` or the last one, unless
        the user has moved on meanwhile (typed, sent, opened or started a chat): nothing
        switches the chat under them."""
        opened, typed = self._open_token, self.parts.composer.text()
        shown = self.parts.chat.model.view  # the chat the window opened on, if it has one

        def typed_or_sent() -> bool:
            # typing into the chat the window already shows is typing into that chat
            return (self.current_view is not None or self.turns.is_running()
                    or (shown is None and self.parts.composer.text() != typed))

        def moved_on() -> bool:  # (loading a chat moves the token itself)
            return self._open_token != opened or typed_or_sent()

        target = open_session
        if target is None and self.prefs is not None:
            saved = self.prefs.value(LAST_SESSION, "")
            target = str(saved) if saved else None
        await self.preferences.load_compaction()
        self.drafts = await self.preferences.load_drafts()
        await self.session_list.reload()
        await self.projects.reload()
        if shown is not None and target is None:
            target = shown.session.id
        if target and self.parts.sessions.session(target) is not None and not moved_on():
            self.parts.sessions.select(target)
            saved_new = self.drafts.get("")  # a new chat's unsent text from the last run
            # the chat first, then the picker's whole list
            await self.load_session(target, unless=typed_or_sent)
            if shown is not None and self.current_session_id == target:
                # what was typed into the chat on screen before the services came was put
                # aside as a new chat's text when the chat opened: it goes back in the box
                early = self.drafts.pop("", "")
                if saved_new is not None:
                    self.drafts[""] = saved_new
                if early.strip() and early != saved_new:
                    self.parts.composer.restore(early)
        elif not moved_on():
            self.show(None)
            self.parts.composer.set_text(self.drafts.pop("", ""))  # a new chat's unsent text
        await self.models.refresh()
        # the first code block on screen should not wait for pygments' lexers to be built
        self.spawn(asyncio.to_thread(warm_up_highlighting), name="warm-up-highlighting")
        self.sync.start()

    async def close(self) -> None:
        """Stop turns (their streamed text is kept), save unsent text, cancel the rest."""
        self.models.close()  # connection changes from now on are not shown
        self.mcp.close()  # a tool call asking now is denied
        await self.sync.close()
        if self.backups is not None:
            await self.backups.close()
        self.stash_composer()
        await self.turns.stop_all()
        self.session_list.close()  # the queue's news no longer reaches this window
        self.projects.close()
        await self.tasks.cancel_all()
        try:
            await self.preferences.save_drafts(self.drafts)
        except Exception:  # the store may already be unusable; nothing more to save then
            log.warning("could not save unsent text", exc_info=True)
        if self.prefs is not None:
            self.prefs.setValue(LAST_SESSION, self.current_session_id or "")
            model = self.models.selected()
            if model:  # named in the next start's first frame
                self.prefs.setValue(LAST_MODEL, model)
                self.prefs.setValue(LAST_MODEL_LABEL, self.models.label_for(model))

    # --- commands from the composer and the banner ----------------------------------

    def command(self, name: str) -> None:
        if name == "context":
            self.occupancy.open_dialog()
        elif name == "compact":
            self.occupancy.compact()

    def _banner_action(self, key: str) -> None:
        if key == "retry":
            self.turns.retry()
        elif key == "settings":
            self.dialogs.open_settings()
        elif key == "compact":
            self.occupancy.compact()
        elif key == "undo":
            self.session_list.undo_delete()
        elif key == "new_chat":
            self.new_chat()
        elif key == "cut_to_fit":
            self.turns.send_cut()
        elif key == "send_as_file":
            self.turns.send_as_file()
        elif key == "cancel":
            self.turns.cancel_too_long()
