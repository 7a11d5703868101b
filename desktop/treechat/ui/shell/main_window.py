"""The main window: chats on the left, the conversation and composer in the middle, a dock on
the right for the history graph and commit timeline.

It opens in two steps. `MainWindow()` is a shell that paints the window's outline (sidebar,
header, composer card) in the theme's colours, using only what a bare Qt window loads; the
app shows it, and once it has painted calls `build()`, which makes the real widgets in the
same places. The composition root attaches the controller once the store is open."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from PySide6.QtCore import QByteArray, QEvent, QSettings, QTimer, Signal
from PySide6.QtWidgets import QMainWindow, QWidget

from .outline import (
    LAST_MODEL,
    LAST_MODEL_LABEL,
    OUTLINE_KEY,
    SHOWS_CHAT,
    SIDEBAR_WIDTH,
    Outline,
    ShellView,
    outline_of,
    shell_colors,
)
from .placement import fit_to_screen as fit_window

if TYPE_CHECKING:
    from PySide6.QtGui import QAction, QCloseEvent, QMoveEvent, QShowEvent
    from PySide6.QtWidgets import (
        QDockWidget,
        QLabel,
        QMenu,
        QSplitter,
        QStackedWidget,
        QTabWidget,
    )

    from ...core.clock import Clock
    from ...services.turns.sessions import SessionView
    from ..chat.view import ChatView
    from ..composer.composer import Composer
    from ..sessions.list import SessionList
    from .error_banner import ErrorBanner
    from .menus import Shortcut
    from .parts import WindowParts

DEFAULT_SIZE = (1180, 760)
DOCK_WIDTH = 380
# The dock's least width, set rather than taken from its tabs' contents: it keeps its width
# across its tabs, and with it open the window still fits a 1280-px screen.
DOCK_MIN_WIDTH = 300


class MainWindow(QMainWindow):
    firstPainted = Signal()
    closeRequested = Signal()  # the user closed the window; the app shuts down, then closes

    def __init__(self, prefs: QSettings | None = None, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Treechat")
        self.setObjectName("MainWindow")
        self.setAccessibleName("Treechat")
        self.prefs = prefs
        self._ready = False
        # what widgets that count time read, until `parts()` hands the app's clock over
        self._monotonic: Callable[[], float] = time.monotonic
        self._painted = False
        self._may_close = False
        self._close_pending = False
        self._built = False
        self.chat: ChatView | None = None
        self._banner: ErrorBanner | None = None
        self._dock: QDockWidget | None = None
        self._model_name: Callable[[str], str] = str  # until the services name models
        self._dock_tabs: QTabWidget | None = None

        self._fitted_shown = False
        self._fit_framed = False  # shown, not yet fitted with the window manager's frame
        self.resize(*DEFAULT_SIZE)
        geometry = prefs.value("window/geometry") if prefs is not None else None
        if isinstance(geometry, QByteArray | bytes) and geometry:
            self.restoreGeometry(QByteArray(geometry))
        self.fit_to_screen(move=bool(geometry))
        saved = prefs.value(OUTLINE_KEY) if prefs is not None else None
        self.shell = ShellView(Outline.decode(saved), shell_colors(prefs))
        self.setCentralWidget(self.shell)

    @property
    def built(self) -> bool:
        return self._built

    def build(self) -> None:
        """Make the real widgets in place of the painted outline (once)."""
        if self._built:
            return
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import (
            QFrame,
            QHBoxLayout,
            QSplitter,
            QStackedWidget,
            QVBoxLayout,
        )

        from ..common.elided_label import ElidedLabel
        from ..composer.composer import Composer
        from ..sessions.list import SessionList
        from .empty_state import EmptyState

        self._built = True
        self.sessions: SessionList = SessionList()
        self.sessions.setMinimumWidth(220)
        # The chat view (and the model code behind it) loads on first use: a new window
        # shows the empty state anyway. The banner and the dock wait the same way.
        self.composer: Composer = Composer()
        if self.prefs is not None:
            self.composer.name_model(str(self.prefs.value(LAST_MODEL, "") or ""),
                                     str(self.prefs.value(LAST_MODEL_LABEL, "") or ""))

        # Elided, not sized to their text: a long title never widens the window.
        self.title: QLabel = ElidedLabel("New chat")
        self.title.setObjectName("ChatTitle")
        self.title.setAccessibleName("Chat title")
        self.subtitle: QLabel = ElidedLabel("")
        self.subtitle.setObjectName("ChatSubtitle")
        header = QFrame()
        header.setObjectName("ChatHeader")
        self.header = header
        header_row = QHBoxLayout(header)
        header_row.setContentsMargins(20, 10, 16, 10)
        header_row.setSpacing(10)
        header_row.addWidget(self.title)
        header_row.addWidget(self.subtitle, 1)

        self.empty = EmptyState()
        self.empty_title = self.empty.title
        self.stack: QStackedWidget = QStackedWidget()
        self.stack.addWidget(self.empty)

        self._banner_row = QHBoxLayout()
        self._banner_row.setContentsMargins(16, 6, 16, 0)

        center = QWidget()
        center.setObjectName("Center")
        column = QVBoxLayout(center)
        column.setContentsMargins(0, 0, 0, 0)
        column.setSpacing(0)
        column.addWidget(header)
        column.addWidget(self.stack, 1)
        column.addLayout(self._banner_row)
        column.addWidget(self.composer)

        self.splitter: QSplitter = QSplitter(Qt.Orientation.Horizontal)
        self.splitter.setChildrenCollapsible(False)
        self.splitter.setHandleWidth(1)
        self.splitter.addWidget(self.sessions)
        self.splitter.addWidget(center)
        self.splitter.setStretchFactor(0, 0)
        self.splitter.setStretchFactor(1, 1)
        self.splitter.setSizes([SIDEBAR_WIDTH, self.width() - SIDEBAR_WIDTH])
        self.setCentralWidget(self.splitter)  # Qt deletes the outline

        self._build_actions()
        self.statusBar().setSizeGripEnabled(False)
        self._status_timer = QTimer(self)
        self._status_timer.setSingleShot(True)
        self._status_timer.timeout.connect(lambda: self.statusBar().clearMessage())
        self.set_ready(False)
        self.restore_geometry()

    # --- building ------------------------------------------------------------------

    @property
    def banner(self) -> ErrorBanner:
        if self._banner is None:
            from .error_banner import ErrorBanner

            self._banner = ErrorBanner(monotonic=self._monotonic)
            self._banner_row.addWidget(self._banner)
        return self._banner

    @property
    def dock(self) -> QDockWidget:
        """The right dock (Graph and Context tabs), made on first use."""
        if self._dock is None:
            from PySide6.QtCore import Qt
            from PySide6.QtWidgets import QDockWidget, QTabWidget

            dock = QDockWidget("Inspector", self)
            dock.setObjectName("InspectorDock")
            dock.setAccessibleName("Inspector")
            dock.setAllowedAreas(Qt.DockWidgetArea.RightDockWidgetArea
                                 | Qt.DockWidgetArea.LeftDockWidgetArea)
            from .empty_state import placeholder_page

            tabs = QTabWidget()
            tabs.setObjectName("InspectorTabs")
            tabs.setDocumentMode(True)
            tabs.setMinimumWidth(DOCK_MIN_WIDTH)
            tabs.addTab(placeholder_page("The history graph of this chat."), "Graph")
            tabs.addTab(placeholder_page("What the next request will carry."), "Context")
            dock.setWidget(tabs)
            self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, dock)
            self.resizeDocks([dock], [DOCK_WIDTH], Qt.Orientation.Horizontal)
            dock.hide()
            self._dock, self._dock_tabs = dock, tabs
            dock.visibilityChanged.connect(self._dock_visibility)
            self._restore_state()  # the dock's saved place and visibility
            self.toggle_dock_action.setChecked(not dock.isHidden())
        return self._dock

    @property
    def dock_tabs(self) -> QTabWidget:
        self.dock  # noqa: B018 (made on first use)
        assert self._dock_tabs is not None
        return self._dock_tabs

    def _toggle_dock(self, shown: bool) -> None:
        self.dock.setVisible(shown)

    def _dock_visibility(self, _visible: bool) -> None:
        if self._dock is not None:
            self.toggle_dock_action.setChecked(not self._dock.isHidden())

    def _action(self, menu: QMenu, text: str, shortcuts: tuple[Shortcut, ...] = (),
                slot: Callable[[], object] | None = None) -> QAction:
        from .menus import add_action

        return add_action(self, menu, text, shortcuts, slot)

    def _build_actions(self) -> None:
        from PySide6.QtCore import Qt
        from PySide6.QtGui import QKeySequence

        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        self.new_chat_action = self._action(
            file_menu, "New chat", (QKeySequence.StandardKey.New,)
        )
        self.import_action = self._action(file_menu, "Import…", ("Ctrl+I",))
        self.local_models_action = self._action(file_menu, "Local models…", ("Ctrl+Shift+M",))
        self.settings_action = self._action(
            file_menu, "Settings…", ("Ctrl+,", QKeySequence.StandardKey.Preferences)
        )
        file_menu.addSeparator()
        self._action(file_menu, "Quit", (QKeySequence.StandardKey.Quit,), self.close)

        chat_menu = bar.addMenu("&Chat")
        self.send_action = self._action(chat_menu, "Send", ("Ctrl+Return",),
                                        self.composer.submit)
        # Esc stops a reply wherever focus is (the action is enabled only while one runs).
        self.stop_action = self._action(chat_menu, "Stop", ("Ctrl+.", "Esc"))
        self.retry_action = self._action(chat_menu, "Retry", ("Ctrl+R",))
        chat_menu.addSeparator()
        self.previous_version_action = self._action(chat_menu, "Previous version",
                                                    ("Alt+Left",))
        self.next_version_action = self._action(chat_menu, "Next version", ("Alt+Right",))
        chat_menu.addSeparator()
        self.context_action = self._action(chat_menu, "Context breakdown…", ("Ctrl+Shift+K",))
        self.compact_action = self._action(chat_menu, "Compact now")
        # filled when it opens, from the open chat's MCP servers
        self.resource_menu = chat_menu.addMenu("Insert a resource")
        chat_menu.addSeparator()
        self.rename_action = self._action(chat_menu, "Rename chat", ("F2",),
                                          lambda *_: self.sessions.begin_rename())
        self.rename_action.setShortcutContext(Qt.ShortcutContext.WidgetWithChildrenShortcut)
        self.removeAction(self.rename_action)
        self.sessions.addAction(self.rename_action)

        view_menu = bar.addMenu("&View")
        self.search_action = self._action(view_menu, "Search chats", ("Ctrl+K", "Ctrl+F"),
                                          self.sessions.focus_search)
        self.focus_composer_action = self._action(view_menu, "Go to message box", ("Ctrl+L",),
                                                  self.composer.focus_input)
        self.toggle_dock_action = self._action(view_menu, "Inspector (graph and context)",
                                               ("Ctrl+Shift+D",))
        self.toggle_dock_action.setCheckable(True)
        self.toggle_dock_action.toggled.connect(self._toggle_dock)

        help_menu = bar.addMenu("&Help")
        self.shortcuts_action = self._action(help_menu, "Keyboard shortcuts", ("F1",))
        self.report_action = self._action(help_menu, "Report a problem…")
        help_menu.addSeparator()
        self.about_action = self._action(help_menu, "About Treechat")

    def shortcut_list(self) -> list[tuple[str, str]]:
        """Every shortcut the window answers to (its menus' and the composer's), for Help."""
        from .menus import shortcut_list

        return shortcut_list(self)

    # --- wiring to the controller --------------------------------------------------

    def ensure_chat_view(self) -> ChatView:
        if self.chat is None:
            from ..chat.view import ChatView

            self.chat = ChatView(monotonic=self._monotonic)
            self.stack.addWidget(self.chat)
        return self.chat

    def parts(self, clock: Clock) -> WindowParts:
        """The widgets the controllers drive (the chat view and the dock made now); the
        ones that count time read `clock`."""
        from .parts import WindowParts

        self._monotonic = clock.monotonic

        return WindowParts(
            window=self,
            sessions=self.sessions,
            chat=self.ensure_chat_view(),
            composer=self.composer,
            banner=self.banner,
            dock=self.dock,
            dock_tabs=self.dock_tabs,
            show_view=self.show_view,
            status=self.show_status,
            set_model_namer=self.set_model_namer,
        )

    def set_model_namer(self, namer: Callable[[str], str]) -> None:
        """Where the chat header and the reply headers get a model's one name."""
        self._model_name = namer
        self.ensure_chat_view().model.model_name = namer

    @property
    def ready(self) -> bool:
        """True once the services are connected and the user may act."""
        return self._ready

    def set_ready(self, ready: bool) -> None:
        self._ready = ready
        self.sessions.setEnabled(ready)
        # The message box takes keys from its first frame on: what is typed while the chats
        # open is kept (Enter sends once the services are there; until then it stays put).
        self.composer.setEnabled(True)
        for action in (self.new_chat_action, self.import_action, self.local_models_action,
                       self.settings_action,
                       self.stop_action,
                       self.retry_action, self.previous_version_action,
                       self.next_version_action, self.context_action, self.compact_action,
                       self.send_action):
            action.setEnabled(ready)
        if ready:
            self.empty_title.setText("What shall we talk about?")
        # the first thing a person does is type: the message box has the keyboard
        self.composer.focus_input()

    def show_store_error(self, message: str) -> None:
        """The store could not be opened: say why, keep the window usable for reading it."""
        self.empty_title.setText("Treechat could not open your chats")
        self.banner.show_notice("The conversation store is unavailable", message)
        self.stack.setCurrentWidget(self.empty)

    def set_busy(self, busy: bool) -> None:
        """A turn runs (or stopped): Stop and Retry follow."""
        self.retry_action.setEnabled(not busy)
        self.stop_action.setEnabled(busy)

    # --- showing -------------------------------------------------------------------

    def show_first_view(self, view: SessionView, messages: int | None = None) -> None:
        """The chat the window opens on, shown as soon as the store has read it (before the
        services are built), or its end as the window kept it (`messages`: how many the whole
        chat has); the controller takes it over when it starts."""
        self.sessions.select(view.session.id)
        self.show_view(view, messages)
        if view.path:
            self.ensure_chat_view().set_view(view)

    def show_view(self, view: SessionView | None, messages: int | None = None) -> None:
        if view is None:
            self.title.setText("New chat")
            self.subtitle.setText("")
            self.stack.setCurrentWidget(self.empty)
            self.setWindowTitle("Treechat")
            return
        session = view.session
        self.title.setText(session.title or "Untitled")
        bits = []
        if session.model:
            bits.append(self._model_name(session.model))
        if messages is None:
            messages = view.whole_messages
        if messages is None:
            messages = sum(1 for n in view.path if n.role in ("user", "assistant"))
        bits.append(f"{messages} message{'s' if messages != 1 else ''}")
        if session.forked_from:
            bits.append("branch")
        self.subtitle.setText("  ·  ".join(bits))
        page: QWidget = self.ensure_chat_view() if view.path else self.empty
        shown = self.stack.currentWidget()
        if page is not self.empty and shown is not None and shown.property(SHOWS_CHAT):
            page = shown  # switching pages and back lays both out again, in mid-stream
        self.stack.setCurrentWidget(page)
        self.setWindowTitle(f"{session.title} — Treechat")

    def show_status(self, text: str) -> None:
        if text:
            self.statusBar().showMessage(text)
            self._status_timer.start(8000)
        else:
            self.statusBar().clearMessage()

    def bring_to_front(self) -> None:
        """Another launch handed over to this window."""
        if self.isMinimized():
            self.showNormal()
        self.show()
        self.raise_()
        self.activateWindow()

    # --- geometry ------------------------------------------------------------------

    def restore_geometry(self) -> None:
        """The dock's place and the sidebar's width (the window's size came with the shell)."""
        if self.prefs is None:
            return
        self._restore_state()
        split = self.prefs.value("window/splitter")
        if isinstance(split, QByteArray | bytes) and split:
            self.splitter.restoreState(QByteArray(split))

    def _restore_state(self) -> None:
        state = self.prefs.value("window/state") if self.prefs is not None else None
        if isinstance(state, QByteArray | bytes) and state:
            self.restoreState(QByteArray(state))

    def save_geometry(self) -> None:
        if self.prefs is None:
            return
        self.prefs.setValue("window/geometry", self.saveGeometry())
        if self._built:
            self.prefs.setValue("window/state", self.saveState())
            self.prefs.setValue("window/splitter", self.splitter.saveState())
            if self.isVisible():
                self.prefs.setValue(OUTLINE_KEY, outline_of(self).encode())
        self.prefs.sync()

    def fit_to_screen(self, move: bool = True) -> None:
        """Keep the window within its screen's free area (see `placement`)."""
        fit_window(self, move)

    # --- events --------------------------------------------------------------------

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        if not self._fitted_shown:
            self._fitted_shown = True
            self._fit_framed = True
            QTimer.singleShot(0, self._fit_once_framed)

    def moveEvent(self, event: QMoveEvent) -> None:
        super().moveEvent(event)
        # the window manager places and frames a new window after it is shown: fit it then,
        # frame and all (once; where the user drags it later is theirs)
        self._fit_once_framed()

    def _fit_once_framed(self) -> None:
        if self._fit_framed and self.frameGeometry() != self.geometry():
            self._fit_framed = False
            self.fit_to_screen()

    def event(self, event: QEvent) -> bool:
        handled = super().event(event)
        if event.type() == QEvent.Type.Paint and not self._painted:
            self._painted = True
            # after this paint reaches the screen, not before
            QTimer.singleShot(0, self.firstPainted.emit)
        return handled

    @property
    def painted(self) -> bool:
        return self._painted

    def closeEvent(self, event: QCloseEvent) -> None:
        if self._may_close:
            event.accept()
            return
        event.ignore()
        self.save_geometry()
        if not self._close_pending:
            self._close_pending = True
            self.closeRequested.emit()

    def close_now(self) -> None:
        """Close for real once the app has shut its services down."""
        self._may_close = True
        self.close()
