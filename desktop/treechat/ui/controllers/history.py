"""Mounts the history graph and the commit timeline in the window's dock, attach chips in the
composer, and wires their gestures to the services: checkout, retry, edit, branch, pin, hide,
drag-to-attach (from the graph or the session list) and merge."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from PySide6.QtCore import QEvent, QMimeData, QModelIndex, QObject, QPoint, Qt, Signal
from PySide6.QtGui import QDrag, QDragMoveEvent, QDropEvent, QMouseEvent
from PySide6.QtWidgets import QAbstractItemView, QApplication, QInputDialog, QWidget

from ...core.clock import Clock
from ...core.model import GraphError
from ...core.occupancy import Occupancy
from ...services.context import ContextEngine
from ...services.merge import AttachService, StagedAttach
from ...services.models.catalog import display_name
from ...services.turns.chat_service import Attachment, ChatService
from ...services.turns.sessions import SessionService, SessionView
from ..composer.attach_chips import AttachChipBar
from ..dialogs.merge import MergeDialog, head_choices
from ..graph.items import label_for
from ..graph.mime import node_mime, read_node_mime
from ..graph.panel import HistoryGraphPanel
from ..graph.timeline import CommitTimeline
from ..sessions.chat_drop import add_chats, drag_label, dragged_chats, read_chats
from ..sessions.roles import SESSION_ID_ROLE
from ..shell.parts import WindowParts
from .turn_views import is_pending
from .wiring import ChatScreen, Spawner, TurnStarter

log = logging.getLogger(__name__)

GRAPH_TAB = 0
CONTEXT_TAB = 1


class _DropTarget(QObject):
    """Accepts dragged nodes and sessions on the composer."""

    def __init__(self, panels: HistoryPanels) -> None:
        super().__init__(panels)
        self.panels = panels

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind in (QEvent.Type.DragEnter, QEvent.Type.DragMove):
            drag = event
            assert isinstance(drag, QDragMoveEvent)  # DragEnter's event is one too
            if read_node_mime(drag.mimeData()) is not None:
                drag.acceptProposedAction()
                return True
        elif kind == QEvent.Type.Drop:
            drop = event
            assert isinstance(drop, QDropEvent)
            source = read_node_mime(drop.mimeData())
            if source is not None:
                drop.acceptProposedAction()
                self.panels.stage(*source)
                return True
        return False


class _SessionDragSource(QObject):
    """Lets a session be dragged out of the session list (its HEAD is what gets attached)."""

    def __init__(self, panels: HistoryPanels, list_view: QAbstractItemView, id_role: int
                 ) -> None:
        super().__init__(panels)
        self.view = list_view
        self.id_role = id_role
        self._press: tuple[QPoint, QModelIndex] | None = None
        self._held: QMouseEvent | None = None  # the press kept back until it is not a drag
        self._replaying = False

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        kind = event.type()
        if kind == QEvent.Type.MouseButtonPress and not self._replaying:
            press = event
            assert isinstance(press, QMouseEvent)
            if press.button() == Qt.MouseButton.LeftButton:
                pos = press.position().toPoint()
                index = self.view.indexAt(pos)
                self._press = (pos, index)
                if index.isValid():
                    # Selecting on press would open the dragged chat, which would then be
                    # attached to itself: the press reaches the list only once it is a click.
                    self._held = press.clone()
                    return True
        elif kind == QEvent.Type.MouseButtonRelease:
            self._press = None
            held, self._held = self._held, None
            if held is not None:
                self._replaying = True
                try:
                    QApplication.sendEvent(watched, held)
                finally:
                    self._replaying = False
        elif kind == QEvent.Type.MouseMove and self._press is not None:
            move = event
            assert isinstance(move, QMouseEvent)
            start, index = self._press
            far = (move.position().toPoint() - start).manhattanLength()
            if far >= QApplication.startDragDistance() and index.isValid():
                self._press = None
                self._held = None
                data = self.drag_data(index)
                if data is not None:
                    # onto the composer the pressed chat is attached (a copy); onto a
                    # project in the list the chats move
                    drag = QDrag(self.view)
                    drag.setMimeData(data)
                    drag.setPixmap(drag_label(self.view, read_chats(data),
                                              str(index.data() or "")))
                    drag.exec(Qt.DropAction.CopyAction | Qt.DropAction.MoveAction,
                              Qt.DropAction.CopyAction)
                    return True
        return False

    def drag_data(self, pressed: QModelIndex) -> QMimeData | None:
        """What a drag from `pressed` carries: the pressed chat's HEAD to attach, and the
        chats it takes along (the other picked ones when it is one of them)."""
        chats = dragged_chats(self.view, pressed)
        return add_chats(node_mime(chats[0], ""), chats) if chats else None


class HistoryPanels(QObject):
    """Owns the Graph and Context tabs and the attach chips of one window. `show_view` is
    to be called with each view the window shows, `occupancy_updated` with each record;
    an edit made in the graph comes out as `editAccepted` (node id, new text)."""

    editAccepted = Signal(str, str)

    def __init__(
        self,
        chat: ChatScreen,
        *,
        parts: WindowParts,
        chat_service: ChatService,
        sessions: SessionService,
        engine: ContextEngine,
        tasks: Spawner,
        clock: Clock,
        pending_changed: Callable[[], None],
        selected_model: Callable[[], str | None],
        run_turn: TurnStarter,
    ) -> None:
        super().__init__(parts.window)
        self._chat = chat
        self.parts = parts
        self._sessions = sessions
        self._engine = engine
        self._tasks = tasks
        self._clock = clock
        self._pending_changed = pending_changed  # the ring counts the chips' cost
        self._selected_model = selected_model
        self._run_turn = run_turn
        self.attach = AttachService(chat_service)
        self.graph = HistoryGraphPanel()
        self.timeline = CommitTimeline()
        self.chips = AttachChipBar()
        self.staged: dict[str, list[StagedAttach]] = {}  # by session id; "" = new chat
        self.view: SessionView | None = None
        self._stale = False
        self._timeline_token = 0
        self._merge_dialog: MergeDialog | None = None
        self._mount()
        self._connect()

    # --- mounting ------------------------------------------------------------------

    def _mount(self) -> None:
        tabs = self.parts.dock_tabs
        for index, widget, title in ((GRAPH_TAB, self.graph, "Graph"),
                                     (CONTEXT_TAB, self.timeline, "Context")):
            old = tabs.widget(index)
            tabs.removeTab(index)
            tabs.insertTab(index, widget, title)
            if old is not None:
                old.deleteLater()
        tabs.setCurrentIndex(GRAPH_TAB)
        composer = self.parts.composer
        composer.card_layout.insertWidget(0, self.chips)
        self.drop_target = _DropTarget(self)
        targets: list[QWidget] = [composer, composer.card, composer.input,
                                  composer.input.viewport()]
        for target in targets:
            target.setAcceptDrops(True)
            target.installEventFilter(self.drop_target)
        sessions = self.parts.sessions
        self.session_drag = _SessionDragSource(self, sessions.view, SESSION_ID_ROLE)
        sessions.view.viewport().installEventFilter(self.session_drag)

    def _connect(self) -> None:
        v = self.graph.view
        v.checkoutRequested.connect(self.checkout)
        v.editRequested.connect(self.edit)
        v.hideRequested.connect(self.hide)
        v.attachRequested.connect(lambda node_id: self.stage(self.session_id or "", node_id))
        v.mergeRequested.connect(self.open_merge)
        self.timeline.itemSelected.connect(self.focus_node)
        self.timeline.commitSelected.connect(self.focus_node)
        self.chips.removeRequested.connect(self.unstage)
        self.parts.dock_tabs.currentChanged.connect(self._tab_changed)
        self.parts.dock.visibilityChanged.connect(self._dock_visibility)

    # --- following the window ------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.view.session.id if self.view is not None else None

    def show_view(self, view: SessionView | None) -> None:
        session_changed = (view.session.id if view is not None else None) != self.session_id
        self.view = view
        if session_changed:
            self._show_chips()
        if not self.parts.dock.isVisible():
            # Nothing to draw for a closed dock: opening a session stays as fast as without
            # the graph, and the dock catches up when it opens.
            self._stale = True
            return
        self._stale = False
        self._draw(view)

    def _dock_visibility(self, visible: bool) -> None:
        if visible and self._stale:
            self._stale = False
            self._draw(self.view)

    def _draw(self, view: SessionView | None) -> None:
        if view is None:
            self._timeline_token += 1  # what another chat's read brings back is dropped
            self.graph.clear()
            self.timeline.set_commit(None)
            self.timeline.set_history(())
        else:
            self.graph.show_view(view)
            if self.timeline_visible():
                self.refresh_timeline()

    def restyle(self) -> None:
        self.graph.view.restyle()

    def occupancy_updated(self, occ: Occupancy | None) -> None:
        """A new record means HEAD's context may have changed (a compaction, a request
        sent, a model switch): the Context tab shows the commit it describes at once."""
        self.timeline.set_occupancy(occ)
        if self.timeline_visible():
            self.refresh_timeline()

    def timeline_visible(self) -> bool:
        tabs = self.parts.dock_tabs
        return tabs.currentWidget() is self.timeline and self.parts.dock.isVisible()

    def _tab_changed(self, index: int) -> None:
        if self.parts.dock_tabs.widget(index) is self.timeline:
            self.refresh_timeline()

    def refresh_timeline(self) -> None:
        view = self.view
        head = view.head if view is not None else None
        if head is not None and is_pending(head):
            return  # the message is not stored yet; the tab catches up when it is
        self._timeline_token += 1  # a read still on its way for what was shown is dropped
        token = self._timeline_token
        if view is None or head is None:
            self.timeline.set_commit(None)
            self.timeline.set_history(())
            return
        async def work() -> None:
            commit = await self._engine.commit_for(view.session.id, head,
                                                   now=self._clock.now())
            history = await self.attach.commit_history(view.session.id, head)
            if token == self._timeline_token and self.session_id == view.session.id:
                self.timeline.set_commit(commit, frozenset(view.pinned))
                self.timeline.set_history(history)

        self._tasks.spawn(work(), name="timeline")

    def focus_node(self, node_id: str) -> None:
        """Show where a timeline item came from in the graph."""
        scene = self.graph.view.graph_scene
        if node_id in scene.nodes:
            scene.set_focused(node_id)
            self.graph.view.center_on_node(node_id)

    # --- graph gestures ------------------------------------------------------------

    def _after(self, coro: Awaitable[SessionView | None], name: str) -> None:
        async def work() -> None:
            try:
                updated = await coro
            except GraphError as exc:
                self.parts.status(str(exc))
                return
            if updated is not None and updated.session.id == self._chat.current_session_id:
                self._chat.show_updated(updated)

        self._tasks.spawn(work(), name=name)

    def checkout(self, node_id: str) -> None:
        """Show the branch through `node_id`: HEAD moves, nothing is sent."""
        sid = self.session_id
        if sid is not None:
            self._after(self._sessions.checkout(sid, node_id), "checkout")

    def hide(self, node_id: str) -> None:
        sid = self.session_id
        if sid is not None:
            self._after(self._sessions.annotate(sid, node_id, "hidden"), "hide")

    def edit(self, node_id: str) -> None:
        view = self.view
        if view is None or node_id not in view.graph:
            return
        dialog = QInputDialog(self.parts.window)
        dialog.setWindowTitle("Edit message")
        dialog.setLabelText("A new version of the message is sent; the old one stays.")
        dialog.setOption(QInputDialog.InputDialogOption.UsePlainTextEditForTextInput)
        dialog.setTextValue(view.graph.get(node_id).text)
        dialog.textValueSelected.connect(lambda text: self.editAccepted.emit(node_id, text))
        dialog.open()

    # --- attach --------------------------------------------------------------------

    def _key(self) -> str:
        return self.session_id or ""

    def stage(self, source_session: str, node_id: str | None) -> None:
        """Resolve a dropped node or session and show it as a chip for the next send."""
        if not source_session:
            return
        key = self._key()

        async def work() -> None:
            try:
                staged = await self.attach.stage(source_session, node_id)
            except GraphError as exc:
                self.parts.status(str(exc))
                return
            chips = self.staged.setdefault(key, [])
            if any(s.source_head == staged.source_head for s in chips):
                return
            chips.append(staged)
            if key == self._key():
                self._show_chips()
            self.parts.status(
                f"Attached “{staged.source_title}”: sent once with your next message")

        self._tasks.spawn(work(), name="stage-attach")

    def unstage(self, staged: StagedAttach) -> None:
        for chips in self.staged.values():
            if staged in chips:
                chips.remove(staged)
        self._show_chips()

    def _show_chips(self) -> None:
        self.chips.set_staged(list(self.staged.get(self._key(), ())))
        self._pending_changed()

    def staged_for(self, session_id: str | None) -> list[StagedAttach]:
        return list(self.staged.get(session_id or "", ()))

    def take_attachments(self, session_id: str) -> list[Attachment]:
        """Hand the chips of the chat being sent to (or of the new chat it came from) to the
        send, and clear them: an attach is expanded once."""
        taken = self.staged.pop(session_id, None) or self.staged.pop("", None) or []
        self._show_chips()
        return [s.attachment for s in taken]

    # --- merge ---------------------------------------------------------------------

    def open_merge(self, heads: list[str]) -> None:
        view = self.view
        if view is None or len(heads) < 2:
            return
        nodes = [n for n in (view.graph.find(h) for h in heads) if n is not None]
        labels = head_choices(nodes, view.head, label_for, display_name)
        base = view.head if view.head in heads else heads[0]
        dialog = MergeDialog(labels, self.parts.window, base=base)
        dialog.mergeAccepted.connect(self.merge)
        self._merge_dialog = dialog
        dialog.open()

    def merge(self, base: str, heads: list[str], instruction: str) -> None:
        sid = self.session_id
        if sid is None:
            return
        async def work() -> None:
            try:
                plan = await self.attach.start_merge(sid, heads, base=base,
                                                     instruction=instruction)
            except GraphError as exc:
                self.parts.status(str(exc))
                return
            self.graph.view.select(())
            self._chat.show_updated(await self._sessions.view(sid))
            model = self._selected_model()
            self._run_turn(lambda sink: self.attach.continue_merge(
                plan, model=model, on_event=sink), heading=f"merging {len(heads)} branches")

        self._tasks.spawn(work(), name="merge")
