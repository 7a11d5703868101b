"""Turns: send, retry, edit and stop, and following a running turn's events into the chat
(the message shown at once, the reply streaming in, tool calls, the final node, a failure
in the banner with what was typed given back)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from PySide6.QtCore import QObject, Signal

from ...core.clock import Clock
from ...core.model import Node
from ...services.attachments import PreparedFile
from ...services.turns.chat_service import ChatService
from ...services.turns.events import (
    NodeAdded,
    OccupancyChanged,
    ReasoningDelta,
    TextDelta,
    ToolCallStarted,
    TurnError,
    TurnEvent,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ...services.turns.message_fit import MessageFit
from ...services.turns.sessions import SessionView
from ..chat.view import ChatView
from ..common.announce import announce, reply_announcement
from ..composer.composer import Composer
from ..sessions.list import SessionList
from ..shell.error_banner import ErrorBanner
from . import too_long
from .ports import (
    AttachmentSource,
    EventSink,
    FileSource,
    ModelPicker,
    Preflight,
    SessionRows,
    SeveralRun,
    ShownChat,
    Spawner,
    StatusLine,
)
from .store_health import StoreHealth
from .turn_ends import TurnEnds
from .turn_views import PENDING_PREFIX, extend_view, retry_target

log = logging.getLogger(__name__)



class TurnController(QObject):
    """Sends, retries, edits and stops the open chat's turns and follows them on screen;
    what the ring, the window and the other controllers learn of a turn, they hear from
    its signals."""

    busyChanged = Signal(bool)  # the open chat's turn started or ended
    turnFinished = Signal(str)  # session id: the store has the turn's final word
    # TurnChanges: what a turn wrote, read back whole, as its last event brings it (before
    # the redraw it brings, so what follows a redraw can tell it is accounted for)
    turnApplied = Signal(object)
    turnFailed = Signal(object)  # TurnError
    occupancyShown = Signal(object)  # Occupancy: the open chat's, as its turn measured it
    occupancyKept = Signal(str, object)  # (session, Occupancy | None): a chat not shown

    def __init__(self, parent: QObject, *, chat: ChatService, shown: ShownChat,
                 models: ModelPicker, rows: SessionRows, tasks: Spawner, clock: Clock,
                 composer: Composer, banner: ErrorBanner, chat_view: ChatView,
                 session_list: SessionList, status: StatusLine) -> None:
        super().__init__(parent)
        self._chat = chat
        self._sessions = chat.sessions
        self._shown = shown
        self._models = models
        self._rows = rows
        self._tasks = tasks
        self._clock = clock
        self._composer = composer
        self._banner = banner
        self._chat_view = chat_view
        self._list = session_list
        self._status = status
        self._turns: dict[str, asyncio.Task[Any]] = {}
        self._pending: dict[str, str] = {}  # session -> text sent, kept until the reply lands
        self._preview_base: dict[str, SessionView] = {}  # the view before a shown preview
        self._headings: dict[str, str] = {}  # session -> what a reply to several says it does
        self._sending = False  # between Enter and the turn being registered
        self._attachments: AttachmentSource | None = None
        self._files: FileSource | None = None
        self._preflight: Preflight | None = None
        self._has_files: Callable[[], bool] | None = None
        self._several: tuple[Callable[[], Sequence[str]], SeveralRun] | None = None
        self._too_long: tuple[str, MessageFit] | None = None  # held until cut or cancelled
        self._turn_heads: dict[str, str | None] = {}  # session -> the head its turn showed
        self._ends = TurnEnds(shown=shown, sessions=self._sessions, rows=rows,
                              session_list=session_list, clock=clock,
                              moved_away=self._moved_away, applied=self.turnApplied.emit)
        composer.sendRequested.connect(self.send)
        composer.stopRequested.connect(self.stop)
        chat_view.retryRequested.connect(self.retry)
        chat_view.editRequested.connect(self.edit)

    def take_attachments_from(self, source: AttachmentSource) -> None:
        """Where a send gets the staged attachments of its chat (the attach chips)."""
        self._attachments = source

    def take_files_from(self, take: FileSource, preflight: Preflight,
                        has_files: Callable[[], bool]) -> None:
        """Where a send gets the files staged for its chat (the file chips), the check a
        message passes before it is sent (a model that cannot see its images), and whether
        files are staged (a message of files alone can be sent)."""
        self._files = take
        self._preflight = preflight
        self._has_files = has_files

    def take_several_from(self, chosen: Callable[[], Sequence[str]], run: SeveralRun) -> None:
        """Where a send learns the models a message goes to when it goes to several, and
        what sends it to them."""
        self._several = (chosen, run)

    def _staged_files(self) -> bool:
        return self._has_files is not None and self._has_files()

    def is_running(self) -> bool:
        sid = self._shown.current_session_id
        return sid is not None and (sid in self._turns or self._chat.is_running(sid))

    async def stop_all(self) -> None:
        """Cancel every running turn and wait for them (what streamed is kept)."""
        for task in list(self._turns.values()):
            task.cancel()
        if self._turns:
            await asyncio.gather(*self._turns.values(), return_exceptions=True)

    # --- starting turns --------------------------------------------------------------

    def send(self, text: str) -> None:
        """Send what was typed. The field is emptied now and refilled if the turn fails
        before the model answered, so what was typed is never lost."""
        if (not text.strip() and not self._staged_files()) or self.is_running() \
                or self._sending:
            return
        parent = self.parent()
        health = parent.findChild(StoreHealth, "StoreHealth") if parent is not None else None
        if health is not None and health.refuse_send():
            return  # a damaged store is read-only: the banner says why, the text stays
        self._sending = True
        self._composer.clear_if(text)
        self._banner.dismiss()
        self._tasks.spawn(self._send(text), name="send")

    def send_cut(self) -> None:
        """Send the message that did not fit, cut to the room the window leaves it."""
        self._send_held(too_long.cut_to_fit(self._chat), "send-cut")

    def send_as_file(self) -> None:
        """Send the message that did not fit as an attached text file."""
        self._send_held(too_long.as_file(self._chat), "send-as-file")

    def _send_held(self, prepare: too_long.Prepare, name: str) -> None:
        """Send the message held by the too-long choice as `prepare` makes it (the text, the
        files with it, what the composer gets back if it never starts); the composer gets
        the message back if preparing it fails."""
        held, self._too_long = self._too_long, None
        if held is None or self.is_running() or self._sending:
            return
        text, fit = held
        self._sending = True
        self._composer.clear_if(text)

        async def work() -> None:
            try:
                sent, extra, shown = await prepare(text, fit)
            except Exception:
                self._sending = False
                self._composer.restore(text)
                raise
            await self._send(sent, checked=True, extra=extra, shown=shown)

        self._tasks.spawn(work(), name=name)

    def cancel_too_long(self) -> None:
        """Keep the message that did not fit in the composer, unsent."""
        self._too_long = None

    async def _fits(self, view: SessionView | None, text: str, model: str | None) -> bool:
        """Whether `text` fits the window; if not, the composer keeps it and the banner
        offers to cut it to fit or to cancel: nothing too big is sent without asking."""
        if len(text) < too_long.QUICK_FIT_CHARS:
            return True
        fit = await self._chat.message_fit(view.session.id if view is not None else None,
                                           text, model=model)
        if fit.fits:
            return True
        self._too_long = (text, fit)
        self._composer.restore(text)
        self._banner.show_notice(too_long.TITLE, too_long.notice(fit),
                                 actions=too_long.ACTIONS)
        return False

    async def _send(self, text: str, *, checked: bool = False,
                    extra: Sequence[PreparedFile] = (), shown: str | None = None) -> None:
        """`extra` files go with the message besides the staged ones; `shown` is what the
        composer gets back if it never starts (the text typed, when that became a file)."""
        view = self._shown.current_view
        model = await self._models.chosen()
        try:
            if self._preflight is not None and not await self._preflight(text, model):
                self._sending = False
                self._composer.restore(shown if shown is not None else text)
                return
            if not checked and not await self._fits(view, text, model):
                self._sending = False
                return
            if view is None:
                session = await self._sessions.create(model=model or "")
                self._list.upsert(session, self._clock.now())
                self._list.select(session.id)
                view = await self._sessions.view(session.id)
                self._shown.show(view)
            session_id = view.session.id
        except Exception as exc:
            self._sending = False
            self._composer.restore(shown if shown is not None else text)
            self._banner.show_error(TurnError("internal", f"Could not start: {exc}"))
            return
        files = [*(self._files(session_id) if self._files is not None else ()), *extra]
        self._pending[session_id] = shown if shown is not None else text
        self._shown.last_errors.pop(session_id, None)
        head = view.graph.find(view.head)
        unanswered = (
            head is not None and head.role == "user" and not view.graph.conversation_children(
                head.id)
        )
        sink = self.sink(session_id)
        several = self._several[0]() if self._several is not None else ()
        if several and self._several is not None:
            self._preview(view, text)
            staged = self._attachments(session_id) if self._attachments is not None else ()
            run = self._several[1](session_id, text, several, staged, files, sink)
        elif files:
            # a message with files is always a new message: an edit or retry would drop them
            self._preview(view, text)
            staged = self._attachments(session_id) if self._attachments is not None else ()
            run = self._chat.send(session_id, text, model=model, attachments=staged,
                                  on_event=sink, files=files)
        elif unanswered and head is not None and head.text == text.strip():
            # the same message again after a failure: answer it rather than repeat it
            run = self._chat.retry(session_id, head.id, model=model, on_event=sink)
        elif unanswered and head is not None:
            # a changed message after a failure replaces the unanswered one as a new version
            run = self._chat.edit(session_id, head.id, text.strip(), model=model,
                                  on_event=sink)
        else:
            self._preview(view, text)
            staged = self._attachments(session_id) if self._attachments is not None else ()
            run = self._chat.send(session_id, text, model=model, attachments=staged,
                                  on_event=sink)
        await self._run_turn(session_id, run)

    def _preview(self, view: SessionView, text: str) -> None:
        """Show the message at once: it is committed before anything else happens, but the
        turn reports it only once the model is resolved (which can take a moment)."""
        last_seq = max((n.seq for n in view.graph), default=0)
        provisional = Node(
            id=f"{PENDING_PREFIX}{view.session.id}", seq=last_seq + 1, created_at=self._clock.now(),
            session_id=view.session.id, role="user", output=text.strip(), predecessor=view.head)
        self._preview_base[view.session.id] = view
        self._shown.redraw(extend_view(view, [provisional], provisional.id))
        self._chat_view.begin_stream(provisional.id, self._models.label_for(
            self._models.selected() or ""))

    def retry(self, node_id: str | None = None) -> None:
        view = self._shown.current_view
        if view is None or self.is_running():
            return
        target = node_id or retry_target(view)
        if target is None:
            return
        self._banner.dismiss()
        session_id = view.session.id
        self._shown.last_errors.pop(session_id, None)
        run = self._chat.retry(session_id, target, model=self._models.selected(),
                               on_event=self.sink(session_id))
        self._tasks.spawn(self._run_turn(session_id, run), name="retry")

    def edit(self, node_id: str, text: str) -> None:
        view = self._shown.current_view
        if view is None or self.is_running() or not text.strip():
            return
        session_id = view.session.id
        self._banner.dismiss()
        run = self._chat.edit(session_id, node_id, text.strip(), model=self._models.selected(),
                              on_event=self.sink(session_id))
        self._tasks.spawn(self._run_turn(session_id, run), name="edit")

    def stop(self) -> None:
        sid = self._shown.current_session_id
        if sid is not None:
            self._chat.stop(sid)

    def run_external(self, make: Callable[[EventSink], Coroutine[Any, Any, Any]],
                     heading: str = "") -> bool:
        """Run a turn started elsewhere (a merge from the graph) like a send; a `heading`
        ("fusing 3 replies") streams it under its own header, not as the shown reply's."""
        view = self._shown.current_view
        if view is None or self.is_running():
            return False
        session_id = view.session.id
        self._banner.dismiss()
        self._headings[session_id] = heading
        run = make(self.sink(session_id))
        self._tasks.spawn(self._run_turn(session_id, run), name="graph-turn")
        return True

    # --- a running turn --------------------------------------------------------------

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
            self._headings.pop(session_id, None)
        await self._ends.finish(session_id)
        self.turnFinished.emit(session_id)
        self._turn_heads.pop(session_id, None)

    def _set_running(self, session_id: str, running: bool) -> None:
        running = running or self._chat.is_running(session_id)
        self._list.set_running(session_id, running)
        if session_id == self._shown.current_session_id:
            self._chat_view.set_busy(running)
            self._composer.set_running(running)
            self.busyChanged.emit(running)

    async def _reload(self, session_id: str) -> None:
        # attach pointers were written just before the message and are not in the view
        view = await self._sessions.view(session_id)
        if self._shown.current_session_id == session_id:
            self._shown.redraw(view)

    def sink(self, session_id: str) -> EventSink:
        return lambda event: self._on_event(session_id, event)

    def _on_event(self, session_id: str, event: TurnEvent) -> None:
        current = session_id == self._shown.current_session_id
        view = self._shown.current_view
        chat = self._chat_view
        if isinstance(event, TurnStarted):
            base = self._preview_base.pop(session_id, None)
            view = base if base is not None and current else view
            if current and view is not None and event.user_node is not None:
                above = event.user_node.predecessor
                if above is not None and above not in view.graph:
                    # attach pointers were written just before the message: read them back
                    self._tasks.spawn(self._reload(session_id), name="reload")
                else:
                    self._shown.redraw(extend_view(view, [event.user_node], event.user_node.id))
            if current and self._shown.current_view is not None:
                self._turn_heads[session_id] = self._shown.current_view.head
            if event.user_node is not None:
                self._tasks.spawn(self._rows.refresh_session(session_id), name="title")
            heading, label = self._headings.pop(session_id, ""), self._models.label_for(event.model)
            if current:
                chat.begin_stream(event.parent_id, " · ".join(filter(None, (label, heading))),
                                  own_turn=bool(heading))
                self._status("Writing a reply…")
        elif isinstance(event, TextDelta):
            if current:
                chat.append_stream_text(event.text)
        elif isinstance(event, ToolCallStarted):
            if current:
                self._status(f"Running {event.name}…")
        elif isinstance(event, ReasoningDelta):
            if current:  # kept apart from the answer; shown as the reply's Thinking row
                self._status("Thinking…")
        elif isinstance(event, NodeAdded):
            if current and view is not None:
                node = event.node
                head = node.id if node.role != "tool" else view.head
                if self._moved_away(session_id, view):
                    head = view.head  # the node joins the graph; the branch shown stays
                else:
                    self._turn_heads[session_id] = head
                self._shown.redraw(extend_view(view, [node], head))
        elif isinstance(event, OccupancyChanged):
            if current:
                self.occupancyShown.emit(event.occupancy)
            else:
                self.occupancyKept.emit(session_id, event.occupancy)
        elif isinstance(event, TurnFinished):
            if not current:
                self.occupancyKept.emit(session_id, event.occupancy)
                self._end_unshown_stream(session_id)
            self._pending.pop(session_id, None)
            self._ends.take(session_id, event.changes)
            if current and view is not None:
                chat.end_stream()
                self._ends.draw(session_id, view, [event.node], event.node.id, event.changes)
                if event.occupancy is not None:
                    self.occupancyShown.emit(event.occupancy)
                self._status("Reply stopped" if event.node.interrupted else "")
                model = str(event.node.metadata.get("model") or event.node.name)
                announce(chat, reply_announcement(self._models.label_for(model),
                                                  event.node.text,
                                                  stopped=event.node.interrupted))
        elif isinstance(event, TurnFailed):
            self._failed(session_id, event)

    def _end_unshown_stream(self, session_id: str) -> None:
        """A new chat on screen leaves the chat view holding the chat it showed last: when
        that chat's reply ends meanwhile, its stream ends there too, or opening the chat
        again would show it still being written."""
        held = self._chat_view.model.view
        if held is not None and held.session.id == session_id:
            self._chat_view.end_stream()

    def _moved_away(self, session_id: str, view: SessionView | None) -> bool:
        """Whether the user checked out another branch while the turn ran: what the turn
        last showed is no longer on the path on screen."""
        shown = self._turn_heads.get(session_id)
        return (shown is not None and view is not None and view.head != shown
                and all(node.id != shown for node in view.path))

    def _failed(self, session_id: str, event: TurnFailed) -> None:
        error = event.error
        current = session_id == self._shown.current_session_id
        base = self._preview_base.pop(session_id, None)
        if base is not None and current:
            self._shown.redraw(base)  # the preview never became a message
        text = self._pending.pop(session_id, None)
        if error.kind != "busy":
            self._shown.last_errors[session_id] = error
        complete = self._ends.take(session_id, event.changes)
        if not current:
            self._end_unshown_stream(session_id)
        if current:
            self._chat_view.end_stream()
            view = self._shown.current_view
            if view is not None and (event.partial is not None or complete):
                partial = [event.partial] if event.partial is not None else []
                self._ends.draw(session_id, view, partial,
                                event.partial.id if event.partial is not None else None,
                                event.changes)
            if text is not None and error.kind not in ("cancelled",):
                self._composer.restore(text)
            self._banner.show_error(error)
            self._status("")
        elif text is not None:
            self._shown.drafts[session_id] = text
        self.turnFailed.emit(error)
