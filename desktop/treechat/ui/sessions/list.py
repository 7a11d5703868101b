"""The left column: New chat, a search field and the session list (projects with their chats,
then the rest newest first, grouped by day). Selecting a row opens it; F2 renames, Delete
deletes (every picked chat), typing searches every branch; clicking a project folds it,
right-clicking it offers what a project can do; chats dragged onto a project move into it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import (
    QEvent,
    QItemSelectionModel,
    QModelIndex,
    QObject,
    QPoint,
    Qt,
    QTimer,
    Signal,
)
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListView,
    QMenu,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from .roles import KIND_ROLE, PROJECT_ID_ROLE, SESSION_ID_ROLE

if TYPE_CHECKING:
    from ...core.model import Session
    from ...services.turns.turn_queue import TurnActivity
    from .chat_drop import ChatDropFilter
    from .delegate import SessionListDelegate
    from .model import SessionListModel

SEARCH_DELAY_MS = 160


class SessionList(QFrame):
    """Shows sessions and search results; tells the window what the user picked or asked."""

    sessionSelected = Signal(str)
    hitSelected = Signal(str, str)  # session id, the message a search hit matched in
    sessionActivated = Signal(str)  # Enter on a row: go to the composer
    newChatRequested = Signal()
    renameRequested = Signal(str, str)
    deleteRequested = Signal(str)
    deleteManyRequested = Signal(list)  # the picked chats, when Delete is asked of several
    searchRequested = Signal(str)  # debounced; "" when the field is cleared
    menuRequested = Signal(str, object)  # session id, the QMenu about to show: add to it
    projectMenuRequested = Signal(str, object)  # project id ("" for the list), the QMenu
    chatsDropped = Signal(list, str)  # chats dragged onto a project ("" for out of any)
    dropHint = Signal(str)  # what releasing the chats dragged over the list would do

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("Sidebar")
        self.setAccessibleName("Chats")
        self._quiet = False
        self._picks: list[str] = []  # the chats picked when the rows were last laid anew
        self._query = ""
        self._hit_sent: tuple[str, str] | None = None

        title = QLabel("Chats")
        title.setObjectName("SidebarTitle")
        self.new_button = QPushButton("New chat")
        self.new_button.setObjectName("NewChatButton")
        self.new_button.setAccessibleName("New chat")
        self.new_button.setToolTip("Start a new chat (Ctrl+N)")
        self.new_button.setCursor(Qt.CursorShape.PointingHandCursor)
        self.new_button.clicked.connect(self.newChatRequested)

        self.search = QLineEdit()
        self.search.setObjectName("SessionSearch")
        self.search.setPlaceholderText("Search all chats…")
        self.search.setClearButtonEnabled(True)
        self.search.setAccessibleName("Search chats")
        self.search.setToolTip("Search titles and every message on every branch (Ctrl+K)")
        self.search.textChanged.connect(self._search_edited)
        self.search.installEventFilter(self)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(SEARCH_DELAY_MS)
        self._search_timer.timeout.connect(self._emit_search)

        # The list itself (model, delegate, view) is made when the first sessions arrive,
        # after the window has painted.
        self._model: SessionListModel | None = None
        self._delegate: SessionListDelegate | None = None
        self._view: QListView | None = None
        self.chat_drop: ChatDropFilter | None = None

        self.empty = QLabel("No chats yet.\nStart one with New chat.")
        self.empty.setObjectName("EmptyHint")
        self.empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.empty.setWordWrap(True)

        top = QHBoxLayout()
        top.setContentsMargins(14, 12, 10, 4)
        top.addWidget(title)
        top.addStretch(1)
        top.addWidget(self.new_button)
        search_row = QHBoxLayout()
        search_row.setContentsMargins(10, 6, 10, 6)
        search_row.addWidget(self.search)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(0)
        layout.addLayout(top)
        layout.addLayout(search_row)
        layout.addWidget(self.empty, 1)
        self._layout = layout
        self.empty.setText("")

    # --- the list, made on first use ------------------------------------------------

    @property
    def model(self) -> SessionListModel:
        self._ensure_list()
        assert self._model is not None
        return self._model

    @property
    def delegate(self) -> SessionListDelegate:
        self._ensure_list()
        assert self._delegate is not None
        return self._delegate

    @property
    def view(self) -> QListView:
        self._ensure_list()
        assert self._view is not None
        return self._view

    def _ensure_list(self) -> None:
        if self._view is not None:
            return
        from .delegate import SessionListDelegate
        from .model import SessionListModel

        model = SessionListModel(self)
        model.renameRequested.connect(self.renameRequested)
        model.modelAboutToBeReset.connect(self._remember_picks)
        delegate = SessionListDelegate(self)
        view = QListView()
        view.setObjectName("SessionListView")
        view.setAccessibleName("Chat list")
        view.setModel(model)
        view.setItemDelegate(delegate)
        view.setUniformItemSizes(True)
        view.setMouseTracking(True)
        # several chats can be picked (Ctrl/Shift) to be dragged or moved together; the
        # current one is the chat shown
        view.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        view.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        view.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        view.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        view.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        view.customContextMenuRequested.connect(self._context_menu)
        view.selectionModel().currentChanged.connect(self._current_changed)
        view.activated.connect(self._activated)
        view.clicked.connect(self._clicked)
        view.installEventFilter(self)
        from .chat_drop import ChatDropFilter

        self.chat_drop = ChatDropFilter(view, model, delegate)
        self.chat_drop.chatsDropped.connect(self.chatsDropped)
        self.chat_drop.hintChanged.connect(self.dropHint)
        self._model, self._delegate, self._view = model, delegate, view
        self._layout.insertWidget(self._layout.indexOf(self.empty), view, 1)
        self.empty.setText("No chats yet.\nStart one with New chat.")
        self._update_empty()

    # --- contents ------------------------------------------------------------------

    def set_sessions(self, sessions: Sequence[Session], now: float) -> None:
        keep = self.current_session_id()
        self.model.set_sessions(sessions, now)
        if self.model.searching is False and self._query:
            self._query = ""
        self.delegate.with_snippets = False
        self._restore(keep)

    def show_results(self, query: str, hits: Sequence[tuple[Session, str]],
                     nodes: Sequence[str | None] = ()) -> None:
        """Show search hits for `query` (ignored if the field has moved on since); `nodes`
        are the messages they matched in, which picking a hit opens the chat at."""
        if query != self._normalized(self.search.text()):
            return
        keep = self.current_session_id()
        self._query = query
        self.delegate.with_snippets = True
        self.model.set_results(hits, nodes)
        self._restore(keep)
        self.empty.setText(f"No chats match “{query}”.")

    def show_all(self, now: float | None = None) -> None:
        keep = self.current_session_id()
        self._query = ""
        self.delegate.with_snippets = False
        self.model.show_all(now)
        self._restore(keep)

    def upsert(self, session: Session, now: float | None = None) -> None:
        keep = self.current_session_id()
        self.model.upsert(session, now)
        self._restore(keep)

    def remove(self, session_id: str) -> None:
        keep = self.current_session_id()
        self.model.remove(session_id)
        self._restore(None if keep == session_id else keep)

    def set_running(self, session_id: str, running: bool) -> None:
        self.model.set_running(session_id, running)

    def set_activity(self, activity: Mapping[str, TurnActivity]) -> None:
        """Which chats wait for their server ("queued") and which are being answered."""
        self.model.set_activity(activity)

    def session(self, session_id: str) -> Session | None:
        return self.model.session(session_id)

    # --- selection -----------------------------------------------------------------

    def current_session_id(self) -> str | None:
        index = self.view.currentIndex()
        value = index.data(SESSION_ID_ROLE) if index.isValid() else None
        return str(value) if value else None

    def selected_session_ids(self) -> list[str]:
        """The chats picked in the list, in its order (the current one when none is)."""
        picked = sorted(self.view.selectionModel().selectedIndexes(), key=lambda i: i.row())
        found = [str(i.data(SESSION_ID_ROLE)) for i in picked if i.data(SESSION_ID_ROLE)]
        current = self.current_session_id()
        return found or ([current] if current else [])

    def select(self, session_id: str | None) -> None:
        """Make `session_id` the current row without reporting it as a new pick (the other
        picked chats stay picked when it is current already)."""
        if session_id is not None and session_id == self.current_session_id():
            self._picks = self.selected_session_ids()
        self._restore(session_id)

    def _remember_picks(self) -> None:
        if self._view is not None:
            self._picks = self.selected_session_ids()

    def _restore(self, session_id: str | None) -> None:
        """`session_id` current again after the rows changed, with the other chats that were
        picked before the change still picked."""
        picks, self._picks = self._picks, []
        self._quiet = True
        try:
            index = self.model.index_of(session_id) if session_id else QModelIndex()
            selection = self.view.selectionModel()
            if index.isValid():
                selection.setCurrentIndex(
                    index, QItemSelectionModel.SelectionFlag.ClearAndSelect
                )
                self.view.scrollTo(index)
                for other in picks:
                    picked = self.model.index_of(other) if other != session_id else index
                    if picked.isValid() and picked != index:
                        selection.select(picked, QItemSelectionModel.SelectionFlag.Select)
            else:
                selection.clear()
        finally:
            self._quiet = False
        self._update_empty()

    @property
    def query(self) -> str:
        """The search the list shows the hits of ("" when it shows every chat)."""
        return self._query if self.model.searching else ""

    def _current_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self._hit_sent = None
        if self._quiet or not current.isValid():
            return
        session_id = current.data(SESSION_ID_ROLE)
        if not session_id:
            return
        node_id = self.model.hit_node(current)
        if node_id:
            self._hit_sent = (str(session_id), node_id)
            self.hitSelected.emit(str(session_id), node_id)
        else:
            self.sessionSelected.emit(str(session_id))

    def _clicked(self, index: QModelIndex) -> None:
        """A click on the hit that is already current opens it again (at its match); a
        click on a project folds or unfolds it."""
        if index.data(KIND_ROLE) == "project":
            keep = self.current_session_id()
            self.model.toggle_project(str(index.data(PROJECT_ID_ROLE)))
            self._restore(keep)
            return
        session_id = index.data(SESSION_ID_ROLE)
        node_id = self.model.hit_node(index)
        if not session_id or not node_id:
            return
        hit = (str(session_id), node_id)
        if self._hit_sent == hit:  # the click that just made it current
            self._hit_sent = None
            return
        self.hitSelected.emit(*hit)

    def _activated(self, index: QModelIndex) -> None:
        session_id = index.data(SESSION_ID_ROLE)
        if session_id:
            self.sessionActivated.emit(str(session_id))

    def begin_rename(self, session_id: str | None = None) -> None:
        index = self.model.index_of(session_id) if session_id else self.view.currentIndex()
        if index.isValid():
            self.view.setCurrentIndex(index)
            self.view.edit(index)

    def _delete_current(self) -> None:
        picked = self.selected_session_ids()
        if len(picked) > 1:
            self.deleteManyRequested.emit(picked)
        elif picked:
            self.deleteRequested.emit(picked[0])

    def set_projects(self, projects: Sequence[tuple[str, str]],
                     member_of: Mapping[str, str]) -> None:
        """The projects (id, name) and which chat is in which."""
        keep = self.current_session_id()
        self.model.set_projects(projects, member_of)
        self._restore(keep)

    def _context_menu(self, pos: QPoint) -> None:
        index = self.view.indexAt(pos)
        session_id = index.data(SESSION_ID_ROLE) if index.isValid() else None
        if not session_id:
            project = index.data(PROJECT_ID_ROLE) if index.isValid() else None
            if project is None and index.isValid():
                return  # a day header
            menu = QMenu(self)
            self.projectMenuRequested.emit(str(project or ""), menu)
            if not menu.isEmpty():
                menu.popup(self.view.viewport().mapToGlobal(pos))
            return
        menu = QMenu(self)
        menu.addAction("Rename", lambda: self.begin_rename(str(session_id)))
        picked = self.selected_session_ids()
        if str(session_id) in picked and len(picked) > 1:
            menu.addAction(f"Delete {len(picked)} chats",
                           lambda: self.deleteManyRequested.emit(picked))
        else:
            menu.addAction("Delete", lambda: self.deleteRequested.emit(str(session_id)))
        self.menuRequested.emit(str(session_id), menu)
        menu.popup(self.view.viewport().mapToGlobal(pos))

    # --- search --------------------------------------------------------------------

    def focus_search(self) -> None:
        self.search.setFocus(Qt.FocusReason.ShortcutFocusReason)
        self.search.selectAll()

    @staticmethod
    def _normalized(text: str) -> str:
        return " ".join(text.split())

    def _search_edited(self, _text: str) -> None:
        self._search_timer.start()

    def _emit_search(self) -> None:
        query = self._normalized(self.search.text())
        if not query:
            if self.model.searching:
                self.show_all()
            self.empty.setText("No chats yet.\nStart one with New chat.")
        self.searchRequested.emit(query)

    def flush_search(self) -> None:
        """Run a pending search now instead of after the typing pause."""
        if self._search_timer.isActive():
            self._search_timer.stop()
            self._emit_search()

    # --- keyboard ------------------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self._view and event.type() in (QEvent.Type.Enter, QEvent.Type.Leave):
            keep = self.current_session_id()
            if self.model.hold_order(event.type() == QEvent.Type.Enter):
                self._restore(keep)
        if event.type() == QEvent.Type.KeyPress and isinstance(event, QKeyEvent):
            key = event.key()
            if watched is self.search:
                if key in (Qt.Key.Key_Down, Qt.Key.Key_Return, Qt.Key.Key_Enter):
                    self.flush_search()
                    self._focus_list()
                    return True
                if key == Qt.Key.Key_Escape and self.search.text():
                    self.search.clear()
                    self.flush_search()
                    return True
            elif watched is self.view:
                if key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and (
                    self.view.state() != QAbstractItemView.State.EditingState
                ):
                    self._delete_current()
                    return True
                if key == Qt.Key.Key_Up and self._at_first_row():
                    self.focus_search()
                    return True
                if key in (Qt.Key.Key_Home, Qt.Key.Key_End):
                    # the first row is a day header, which cannot be current
                    target = (self.model.first_session_index() if key == Qt.Key.Key_Home
                              else self.model.last_session_index())
                    if target.isValid():
                        self.view.setCurrentIndex(target)
                    return True
        return super().eventFilter(watched, event)

    def _at_first_row(self) -> bool:
        current = self.view.currentIndex()
        first = self.model.first_session_index()
        return not current.isValid() or current.row() == first.row()

    def _focus_list(self) -> None:
        self.view.setFocus(Qt.FocusReason.TabFocusReason)
        if not self.view.currentIndex().isValid():
            first = self.model.first_session_index()
            if first.isValid():
                self.view.setCurrentIndex(first)

    def _update_empty(self) -> None:
        has_rows = self.model.rowCount() > 0
        self.view.setVisible(has_rows)
        self.empty.setVisible(not has_rows)
