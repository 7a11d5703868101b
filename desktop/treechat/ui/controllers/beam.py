"""Several models at once in the window: a send to the models the set button names streams a
column per model in the compare view (the chat view follows the first), the compare view
opens on any message with several replies, a column's reply is continued from, and a chosen
model fuses them into a merge node."""

from __future__ import annotations

from collections.abc import Coroutine, Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QStackedWidget, QWidget

from ...core.dag import version_of
from ...core.model import GraphError, Node
from ...services.attachments import PreparedFile
from ...services.turns.beam import DEFAULT_FUSE_INSTRUCTION, BeamEvent, BeamService, SiblingReply
from ...services.turns.chat_service import Attachment, ChatService
from ...services.turns.events import (
    TextDelta,
    TurnEvent,
    TurnFailed,
    TurnFinished,
    TurnStarted,
)
from ...services.turns.sessions import SessionView
from ..chat.compare_view import Column, CompareView, facts_text
from ..chat.view import ChatView
from ..composer.composer import Composer
from ..shell.outline import SHOWS_CHAT
from .ports import (
    EventSink,
    ModelPicker,
    OccupancyRefresh,
    RedrawnChat,
    Spawner,
    StatusLine,
    TurnRunner,
)

if TYPE_CHECKING:
    from ..shell.main_window import MainWindow
    from .conversation import ConversationController

COMPARE_SHORTCUT = "Ctrl+Shift+B"


class BeamController:
    def __init__(
        self,
        chat_service: ChatService,
        *,
        chat: RedrawnChat,
        models: ModelPicker,
        turns: TurnRunner,
        occupancy: OccupancyRefresh,
        tasks: Spawner,
        status: StatusLine,
        composer: Composer,
        chat_view: ChatView,
    ) -> None:
        self.beam = BeamService(chat_service)
        self._sessions = chat_service.sessions
        self._open = chat
        self._models = models
        self._turns = turns
        self._occupancy = occupancy
        self._tasks = tasks
        self._status = status
        self._composer = composer
        self._chat_view = chat_view
        self.view: CompareView | None = None
        self._message: tuple[str, str] | None = None  # (session, message) the view shows
        self._open_view = False  # shown until the user goes back (a redraw does not close it)
        composer.several.saveRequested.connect(self.save_set)
        composer.several.deleteRequested.connect(self.delete_set)
        # a message to one model is answered in the chat: that is where it shows
        composer.sendRequested.connect(lambda _text: None if composer.several.chosen()
                                       else self.back())
        chat_view.menuRequested.connect(self._reply_menu)

    # --- the set button ------------------------------------------------------------

    async def load_sets(self) -> None:
        self._composer.several.set_sets(await self.beam.model_sets())

    def save_set(self, name: str, models: list[str]) -> None:
        async def work() -> None:
            sets = await self.beam.save_model_set(name, models)
            self._composer.several.set_sets(sets)
            self._status(f"Saved “{' '.join(name.split())}”")

        self._tasks.spawn(work(), name="save-model-set")

    def delete_set(self, name: str) -> None:
        async def work() -> None:
            self._composer.several.set_sets(await self.beam.delete_model_set(name))

        self._tasks.spawn(work(), name="delete-model-set")

    # --- sending to several --------------------------------------------------------

    def send_several(
        self, session_id: str, text: str, models: Sequence[str],
        staged: Sequence[Attachment], files: Sequence[PreparedFile], sink: EventSink,
    ) -> Coroutine[Any, Any, Node | None]:
        """The run of a send to `models`: a column each streams in the compare view, the
        chat view follows the first to start, the banner speaks only if none answered."""
        order = list(models)
        if order and self._models.selected() not in order:
            # the chat follows the first model asked: the picker and the header name it, never
            # a model this message did not go to
            self._composer.select_model(order[0])
            self._models.set_model(order[0])
        view = self._ensure_view()
        view.set_message(text)
        view.show_columns([Column("", self._models.label_for(m), state="streaming") for m in order])
        self._offer_fuse_models(view)  # named already; fusing waits for the replies
        view.set_running(True)
        self._message = None
        self._show_view()
        lead: list[int] = []
        failed: list[TurnFailed] = []

        def on_event(event: BeamEvent) -> None:
            inner = event.event
            compare = self.view if self._message is None else None
            shown = compare is not None
            if compare is not None and isinstance(inner, TextDelta):
                compare.append(event.index, inner.text)
            elif shown and isinstance(inner, TurnFinished | TurnFailed):
                self._column_done(event.index, inner)
            if isinstance(inner, TurnStarted) and not lead:
                lead.append(event.index)
            if isinstance(inner, TurnFailed):
                failed.append(inner)
                if len(failed) == len(order):
                    sink(inner)  # nobody answered: the banner, the text back in the box
                elif lead and event.index == lead[0]:
                    self._chat_view.end_stream()
                return
            if lead and event.index == lead[0]:
                sink(inner)

        async def run() -> Node | None:
            result = await self.beam.send(session_id, text, order, attachments=staged,
                                          files=files, on_event=on_event)
            if self.view is not None:
                self.view.set_running(False)
            if result.message_id and self._showing():
                await self._fill(session_id, result.message_id)
            return next((r for r in result.replies if r is not None), None)

        return run()

    def _column_done(self, index: int, event: TurnEvent) -> None:
        view = self.view
        if view is None or not 0 <= index < len(view.columns):
            return
        column = view.columns[index].column
        if isinstance(event, TurnFinished):
            node = event.node
            usage = node.metadata.get("usage") or {}
            state = "stopped" if node.interrupted else ""
            model = str(node.metadata.get("model") or "")
            cost = usage.get("cost_usd")
            facts = facts_text(cost, self._priced(model, cost), None,
                               self._models.is_local(model))
            view.columns[index].show_column(Column(node.id, column.label, column.text or
                                                   node.text, facts, state))
        elif isinstance(event, TurnFailed):
            view.columns[index].show_column(Column("", column.label, column.text, "",
                                                   event.error.message))

    def _priced(self, model: str, cost_usd: object) -> bool:
        """Whether a reply just finished has a known price: its model's, as the picker says
        it (the catalog prices a model the way its requests are billed); a reply's metadata
        writes 0 for an unpriced one too, so its sum alone cannot tell."""
        choice = next((c for c in self._models.choices if c.id == model), None)
        if choice is not None:
            return choice.priced
        return isinstance(cost_usd, int | float) and cost_usd > 0

    # --- comparing -----------------------------------------------------------------

    def compare(self, node_id: str | None = None) -> None:
        """Show the replies to the message `node_id` is (or answers) side by side; without a
        node, those of the last message of the branch on screen that has several."""
        shown = self._open.current_view
        if shown is None:
            return

        async def work() -> None:
            target = node_id or last_with_siblings(await self._sessions.view(shown.session.id))
            if target is None:
                self._status("This branch has no message with several replies to compare")
                return
            await self._fill(shown.session.id, target, open_it=True)

        self._tasks.spawn(work(), name="compare")

    async def _fill(self, session_id: str, node_id: str, *, open_it: bool = False) -> None:
        try:
            replies = await self.beam.siblings(session_id, node_id)
        except GraphError as exc:
            self._status(str(exc))
            return
        if self._open.current_session_id != session_id or not replies:
            return
        stored = await self._sessions.view(session_id)
        message = stored.graph.find(replies[0].first.predecessor or "")
        view = self._ensure_view()
        self._message = (session_id, replies[0].first.predecessor or "")
        view.set_message(message.text if message is not None else "")
        # each column names its reply's place among the versions, as the chat's `< N/M >`
        # does: the columns follow the order the models were asked, the versions the order
        # the replies were written
        view.show_columns([self._column(r, version_of(stored.graph, r.first.id))
                           for r in replies])
        self._offer_fuse_models(view)
        if open_it:
            self._show_view()

    def _offer_fuse_models(self, view: CompareView) -> None:
        view.set_fuse_models(
            [(ch.id, ch.label) for ch in self._models.choices if ch.available],
            self._models.selected(), DEFAULT_FUSE_INSTRUCTION)

    def _column(self, reply: SiblingReply, version: tuple[int, int]) -> Column:
        local = self._models.is_local(reply.model)
        facts = facts_text(reply.cost_usd, reply.priced, reply.first_token_s, local)
        place = f"version {version[0]}/{version[1]}"
        return Column(reply.first.id, self._models.label_for(reply.model) or reply.label,
                      reply.text, f"{facts} · {place}" if facts else place,
                      "stopped" if reply.interrupted else "")

    def continue_from(self, node_id: str) -> None:
        """The chat goes on from that reply: HEAD moves to its branch, nothing is sent."""
        shown = self._open.current_view
        if shown is None or not node_id:
            return

        async def work() -> None:
            updated = await self._sessions.show_branch_of(shown.session.id, node_id)
            self.back()
            if self._open.current_session_id == shown.session.id:
                self._open.redraw(updated)
                await self._occupancy.refresh()

        self._tasks.spawn(work(), name="continue-from")

    def fuse(self, model: str, instruction: str) -> None:
        """One reply by `model` that reads every column's reply, as a merge node."""
        if self._message is None:
            return
        session_id, message_id = self._message
        order = [col.column.key for col in self.view.columns] if self.view else None

        def make(sink: EventSink) -> Coroutine[Any, Any, Any]:
            async def run() -> Node | None:
                try:
                    result = await self.beam.fuse(session_id, message_id, model=model,
                                                  instruction=instruction, replies=order,
                                                  on_event=sink)
                except GraphError as exc:
                    self._status(str(exc))
                    return None
                return result.reply

            return run()

        count = len(order) if order else 0
        if self._turns.run_external(make, heading=f"fusing {count} replies" if count > 1
                                    else "fusing the replies"):
            self.back()

    # --- where it shows ------------------------------------------------------------

    def _ensure_view(self) -> CompareView:
        if self.view is None:
            self.view = CompareView()
            self.view.setProperty(SHOWS_CHAT, True)  # a redraw of the chat leaves it up
            self.view.backRequested.connect(self.back)
            self.view.continueRequested.connect(self.continue_from)
            self.view.fuseRequested.connect(self.fuse)
            stack = self._stack()
            if stack is not None:
                stack.addWidget(self.view)
                stack.currentChanged.connect(lambda _index: self._keep_open())
        return self.view

    def _stack(self) -> QStackedWidget | None:
        """The window's centre, where the chat view is one page: the compare view is
        another, so the header, banner and composer stay where they are."""
        parent: QWidget | None = self._chat_view.parentWidget()
        while parent is not None and not isinstance(parent, QStackedWidget):
            parent = parent.parentWidget()
        return parent

    def _showing(self) -> bool:
        stack = self._stack()
        return self.view is not None and stack is not None and stack.currentWidget() is self.view

    def _show_view(self) -> None:
        stack = self._stack()
        if stack is not None and self.view is not None:
            self._open_view = True
            stack.setCurrentWidget(self.view)

    def _keep_open(self) -> None:
        """Every redraw of the chat shows its page; while open, the compare view stays (the
        empty state of a new chat closes it)."""
        stack = self._stack()
        if self._open_view and stack is not None and self.view is not None \
                and stack.currentWidget() is self._chat_view:
            stack.setCurrentWidget(self.view)
        elif stack is not None and stack.currentWidget() is not self.view:
            self._open_view = False

    def back(self) -> None:
        """Back to one reply at a time (`< N/M >`)."""
        self._open_view = False
        stack = self._stack()
        if stack is not None and self.view is not None and stack.currentWidget() is self.view:
            stack.setCurrentWidget(self._chat_view)

    def _reply_menu(self, key: str, menu: QMenu) -> None:
        view = self._open.current_view
        if view is None or key not in view.graph:
            return
        node = view.graph.get(key)
        message = node if node.role == "user" else view.graph.find(node.predecessor or "")
        if message is None or node.role not in ("user", "assistant"):
            return
        replies = [n for n in view.graph.conversation_children(message.id)
                   if n.role == "assistant"]
        if len(replies) < 2:
            return
        action = QAction(f"Compare the {len(replies)} replies side by side", menu)
        action.triggered.connect(lambda *_: self.compare(message.id))
        menu.addSeparator()
        menu.addAction(action)


def last_with_siblings(view: SessionView) -> str | None:
    """The last message on the branch shown that has two or more replies."""
    for node in reversed(view.path):
        if node.role == "user" and len([
                n for n in view.graph.conversation_children(node.id)
                if n.role == "assistant"]) >= 2:
            return node.id
    return None


def add_beam_controls(window: MainWindow, conversation: ConversationController) -> BeamController:
    """Wire sending to several models, comparing and fusing into the window."""
    parts = conversation.parts
    controller = BeamController(
        conversation.chat_service, chat=conversation, models=conversation.models,
        turns=conversation.turns, occupancy=conversation.occupancy, tasks=conversation,
        status=parts.status, composer=parts.composer, chat_view=parts.chat)
    conversation.turns.take_several_from(parts.composer.several.chosen, controller.send_several)
    conversation.sessionOpened.connect(lambda _view: controller.back())
    conversation.spawn(controller.load_sets(), name="model-sets")
    action = QAction("Compare replies side by side", window)
    action.setShortcut(QKeySequence(COMPARE_SHORTCUT))
    action.triggered.connect(lambda *_: controller.compare())
    for menu_action in window.menuBar().actions():
        menu = menu_action.menu()
        if isinstance(menu, QMenu) and menu_action.text().replace("&", "") == "Chat":
            menu.addSeparator()
            menu.addAction(action)
    window.addAction(action)
    return controller
