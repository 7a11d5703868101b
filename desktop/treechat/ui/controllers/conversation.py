"""What the window shows right now: the open session (or a new chat), kept on screen from
what the services return, and the controllers that act on it, one per concern (the session
list, turns, models, occupancy, graph operations, dialogs). Nothing here blocks the GUI
thread: every service call is awaited on the qasync loop."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QSettings, Signal

from ...services.bootstrap import Services
from ...services.clock import Clock
from ...services.preferences import Preferences
from ...services.search import SearchService
from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionView
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
from .session_list import SessionListController
from .sync import SyncController
from .turns import TurnController

if TYPE_CHECKING:
    from .backups import BackupsController
    from .beam import BeamController

log = logging.getLogger(__name__)

VIEW_CACHE = 12  # sessions whose last view is kept to show at once when reopened


def differs(shown: SessionView, stored: SessionView) -> bool:
    """Whether the store has moved on from a view shown from memory."""
    return (
        shown.session != stored.session
        or len(shown.graph) != len(stored.graph)
        or shown.hidden != stored.hidden
        or shown.pinned != stored.pinned
    )


class ConversationController(QObject):
    """One per window. `current_view` is what the widgets show right now."""

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
        clock: Clock | None = None,
        search: SearchService,
    ) -> None:
        super().__init__(parts.window)
        self.services = services
        self.chat_service = services.chat
        self.sessions = services.chat.sessions
        self.preferences = Preferences.of(services)
        self.parts = parts
        self.prefs = prefs
        self.theme = theme
        self.clock: Clock = clock if clock is not None else services.clock
        self.tasks = BackgroundTasks(on_error=self._task_failed)
        self.current_view: SessionView | None = None
        self.drafts: dict[str, str] = {}  # session -> unsent composer text ("" = new chat)
        self.last_errors: dict[str, TurnError] = {}  # the failure each session last showed
        self._open_token = 0
        self._views: OrderedDict[str, SessionView] = OrderedDict()  # recently shown
        self.models = ModelsController(self)
        parts.set_model_namer(self.models.label_for)  # one name per model, everywhere
        self.occupancy = OccupancyController(self)
        self.turns = TurnController(self)
        self.session_list = SessionListController(self, search)
        self.graph_ops = GraphOperations(self)
        self.dialogs = DialogsController(self)
        self.history = HistoryPanels(self)
        self.attachments = AttachmentsController(self)  # files in a message
        self.bundled_note = BundledModelNote(self)
        self.mcp = McpController(self)
        self.sync = SyncController(self)  # in the background, once started
        self.artifacts = ArtifactsController(self)  # a reply's artifacts: save or open
        self.backups: BackupsController | None = None  # with the window's menus
        self.beam: BeamController | None = None  # several models at once, with the menus
        parts.composer.commandRequested.connect(self.command)
        parts.banner.actionTriggered.connect(self._banner_action)

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

    # --- the open session ----------------------------------------------------------

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None

    def open_session(self, session_id: str) -> None:
        if session_id == self.current_session_id:
            return
        self.spawn(self.load_session(session_id), name="open-session")

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
        if cached is not None and not self.chat_service.is_running(session_id):
            self._present(cached)
            fresh = await self.sessions.view(session_id)
            if token != self._open_token:
                return
            if differs(cached, fresh):
                self.redraw(fresh)
        else:
            view = await self.sessions.view(session_id)
            if token != self._open_token or (unless is not None and unless()):
                return  # the user moved on while this loaded
            self._present(view)
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
        running = view is not None and self.chat_service.is_running(view.session.id)
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
            self.spawn(self.occupancy.refresh(), name="occupancy")

    def update_header(self, view: SessionView) -> None:
        """The session's row changed (title, model): same nodes, new header."""
        self.current_view = view
        self.parts.show_view(view)

    def forget_view(self, session_id: str) -> None:
        """The session moved on while it was not shown: reopening reads it afresh."""
        self._views.pop(session_id, None)

    def _remember(self, view: SessionView) -> None:
        self._views[view.session.id] = view
        self._views.move_to_end(view.session.id)
        while len(self._views) > VIEW_CACHE:
            self._views.popitem(last=False)

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
