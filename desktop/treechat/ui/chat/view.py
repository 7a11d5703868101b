"""The conversation in the centre of the window: the active path of a session as a list
(model + delegate), the reply streaming in, version switches and per-message actions."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QEvent, QPoint, QRectF, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (
    QAction,
    QDesktopServices,
    QGuiApplication,
    QKeyEvent,
    QKeySequence,
    QShowEvent,
)
from PySide6.QtWidgets import QAbstractItemView, QDialog, QFrame, QMenu, QVBoxLayout, QWidget

from ...core.citations import SOURCE_SCHEME
from ...services.turns.events import TurnError
from ...services.turns.sessions import SessionView
from .chat_list import ChatList
from .delegate import ChatDelegate
from .message_editor import MessageEditor
from .message_reader import MessageReader
from .model import ChatModel, ChatRow, RowKind
from .scrolling import Anchor, ScrollKeeper
from .search_hit import SearchHit
from .selection import TextSelector
from .shortcuts import key_action, menu_actions
from .streaming import StreamPainter

MODIFIER_KEYS = (Qt.Key.Key_Control, Qt.Key.Key_Shift, Qt.Key.Key_Alt, Qt.Key.Key_Meta)


class ChatView(QWidget):
    """The active path of one session, newest at the bottom.

    The window drives it: `set_view` after anything that moved HEAD, `begin_stream` /
    `append_stream_text` / `end_stream` while a reply arrives, `set_busy` while a turn runs.
    User intents come back as signals; nothing here touches the store."""

    retryRequested = Signal(str)
    editRequested = Signal(str, str)
    branchRequested = Signal(str)
    pinRequested = Signal(str, bool)
    copyRequested = Signal(str)
    versionRequested = Signal(str, int)
    settingsRequested = Signal()
    menuRequested = Signal(str, object)  # row key, the QMenu about to show: add to it
    attachmentOpened = Signal(str, int)  # node id, the index of the file in its message

    _built = False  # theme changes arrive while __init__ runs: nothing to restyle yet

    def __init__(self, parent: QWidget | None = None, *,
                 monotonic: Callable[[], float] = time.monotonic) -> None:
        super().__init__(parent)
        self._monotonic = monotonic  # rate-limit countdowns, copied marks, idle measuring
        self.setObjectName("chatView")
        self.model = ChatModel(self)
        self.list = ChatList(self, self)
        self.list.setObjectName("chatList")
        self.list.setAccessibleName("Conversation")
        self.list.setAccessibleDescription(
            "Messages of the current branch. Up and Down move between messages; "
            "Ctrl+C copies, E edits, R retries, B branches, P pins, Alt+Left and Alt+Right "
            "switch versions, the menu key lists every action."
        )
        self.list.setFrameShape(QFrame.Shape.NoFrame)
        self.list.setVerticalScrollMode(QAbstractItemView.ScrollMode.ScrollPerPixel)
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setUniformItemSizes(False)
        self.list.setSelectionMode(QAbstractItemView.SelectionMode.NoSelection)
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.list.setMouseTracking(True)
        self.list.setSpacing(0)
        self.list.setTextElideMode(Qt.TextElideMode.ElideNone)
        self.list.setAutoScroll(False)
        self.delegate = ChatDelegate(self.list, lambda: self.model.rows, monotonic)
        self.list.set_chat_delegate(self.delegate)
        self.list.setModel(self.model)
        self.selector = TextSelector(self.list, self.delegate, lambda: self.model.rows,
                                     self.model.index_of)
        self._search_hit = SearchHit(self)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.addWidget(self.list)
        self.setFocusProxy(self.list)

        self._reader: MessageReader | None = None
        self._busy = False
        self._copied_timer = QTimer(self)
        self._copied_timer.setSingleShot(True)
        self._copied_timer.timeout.connect(self.list.viewport().update)
        self._wait_timer = QTimer(self)
        self._wait_timer.setInterval(1000)
        self._wait_timer.timeout.connect(self._tick_wait)

        self.scroller = ScrollKeeper(self.list, self.model, self.delegate, self.isVisible,
                                     monotonic)
        self.stream = StreamPainter(self.list, self.model, self.delegate, self.scroller, self)
        self.delegate.actionTriggered.connect(self._on_action)
        self.delegate.editSubmitted.connect(self._edit_submitted)
        self.delegate.editCancelled.connect(self._close_editor)
        self.delegate.sizeHintChanged.connect(lambda _index: self.scroller.relayout())
        self.model.rowsInserted.connect(lambda *_: self.scroller.rows_changed())
        self.model.rowsRemoved.connect(lambda *_: self.scroller.rows_changed())
        self.model.dataChanged.connect(lambda *_: self.scroller.rows_changed())
        self._built = True

    # --- public API ----------------------------------------------------------------------

    def set_view(self, view: SessionView) -> None:
        """Show `view`'s active path. Stays at the bottom if it was there (or the session
        changed); otherwise the message at the top of the screen stays where it is."""
        previous = self.model.view
        new_session = previous is None or previous.session.id != view.session.id
        drafts = self._editor_drafts()
        anchor = Anchor(bottom=True) if new_session else self.scroller.current_anchor()
        if new_session:
            self.stream.clear()
            self.hold_background()
            self.selector.clear()
        elif self.model.streaming:
            # text still buffered belongs to what streamed so far: if this view committed
            # it as a node, it must go with the rest, not reappear in the continuing reply
            self.stream.flush()
        with self.scroller.guard():
            self.model.set_view(view)
        if anchor.bottom:
            self.scroller.stick = True
            self.scroller.prepare_bottom()
        self.scroller.settle(anchor)
        self._reopen_editors(drafts)
        self.stream.update_typing()

    def show_highlighting(self) -> None:
        """Code was shown plain while the highlighter loaded: lay the rows out again, in
        colour (their heights stay: only the colours and weights of the code change)."""
        self.delegate.layouter.clear()
        self.list.viewport().update()

    def begin_stream(self, parent_id: str | None, label: str, own_turn: bool = False) -> None:
        """A reply to `parent_id` starts: show it (typing dots until text arrives)."""
        self.stream.clear()
        self._wait_timer.stop()
        self.scroller.stick = True
        with self.scroller.guard():
            self.model.begin_stream(parent_id, label, own_turn)
        self.scroller.settle(Anchor(bottom=True))
        self.stream.update_typing()

    def append_stream_text(self, text: str) -> None:
        """Add streamed text; painted at most ~30 times a second."""
        if not text:
            return
        self.stream.append(text)

    def end_stream(self) -> None:
        self.stream.flush()
        self.model.end_stream()
        self.stream.update_typing()

    def set_busy(self, busy: bool) -> None:
        """While a turn runs, retry and edit are shown disabled and do nothing."""
        self._busy = busy
        self.delegate.busy = busy
        for editor in self.list.viewport().findChildren(MessageEditor):
            editor.set_busy(busy)
        self.list.viewport().update()

    def is_busy(self) -> bool:
        return self._busy

    def show_turn_error(self, error: TurnError) -> None:
        """An inline row under the conversation saying what failed, with its action."""
        self.stream.flush()
        if error.action == "wait" and error.retry_after:
            self.delegate.wait_until = self._monotonic() + float(error.retry_after)
            self._wait_timer.start()
        else:
            self.delegate.wait_until = 0.0
        with self.scroller.guard():
            self.model.set_error(error)
        self.scroller.settle(self.scroller.current_anchor())
        self.stream.update_typing()

    def clear_turn_error(self) -> None:
        with self.scroller.guard():
            self.model.set_error(None)
        self.scroller.settle(self.scroller.capture_anchor())

    # --- streaming -----------------------------------------------------------------------

    def set_stream_waiting(self, note: str) -> None:
        """The reply has not started: its header says `note` ("queued · next")."""
        self.model.set_stream_waiting(note)

    def _tick_wait(self) -> None:
        if self._monotonic() >= self.delegate.wait_until:
            self._wait_timer.stop()
        self.list.viewport().update()

    def showEvent(self, event: QShowEvent) -> None:
        super().showEvent(event)
        self.scroller.settle(self.scroller.capture_anchor())

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        themed = event.type() in (QEvent.Type.PaletteChange, QEvent.Type.FontChange,
                                  QEvent.Type.StyleChange) and self._built
        # the list inherits both, but may not have been told yet: read them from here
        if themed and self.delegate.refresh_theme(self.palette(), self.font()):
            self.scroller.settle(self.scroller.capture_anchor())
            self.list.viewport().update()

    # --- actions -------------------------------------------------------------------------

    def _on_action(self, key: str, action: str) -> None:
        index = self.model.index_of(key)
        if index < 0:
            return
        row = self.model.row_at(index)
        if not self.delegate.action_enabled(row, action):
            return
        node_id = row.node_id or ""
        if action == "copy":
            self._copy_row(row)
        elif action.startswith("code:"):
            text = self.delegate.code_text(row, int(action.split(":", 1)[1]))
            QGuiApplication.clipboard().setText(text)
            self._flash_copied(key, action)
        elif action.startswith("link:"):
            url = QUrl(action[5:])
            # a citation's link (SOURCE_SCHEME) goes to the handler the window registers
            if url.scheme() in ("http", "https", "mailto", SOURCE_SCHEME):
                QDesktopServices.openUrl(url)
        elif action.startswith("file:") and node_id:
            self.attachmentOpened.emit(node_id, int(action[5:]))
        elif action == "edit":
            self.start_edit(key)
        elif action == "read":
            self.open_reader(key)
        elif action == "retry" and node_id:
            self.retryRequested.emit(node_id)
        elif action == "branch" and node_id:
            self.branchRequested.emit(node_id)
        elif action == "pin" and node_id:
            self.pinRequested.emit(node_id, not row.pinned)
        elif action in ("prev", "next") and node_id:
            n, m = row.version
            target = n - 1 if action == "prev" else n + 1
            if 1 <= target <= m:
                self.versionRequested.emit(node_id, target)
        elif action in ("toggle", "more"):
            with self.scroller.guard():
                self.model.toggle_expanded(key)
            self.scroller.settle(self.scroller.capture_anchor())
            if action == "more":  # folding a tall message can leave its top off screen
                self.list.scrollTo(self.model.index(self.model.index_of(key)),
                                   QAbstractItemView.ScrollHint.EnsureVisible)
        elif action in ("error:retry", "error:wait") and row.retry_target:
            self.retryRequested.emit(row.retry_target)
        elif action == "error:settings":
            self.settingsRequested.emit()

    def _copy_row(self, row: ChatRow) -> None:
        text = row.text
        if row.kind == RowKind.ERROR and row.error is not None:
            text = row.error.message
        QGuiApplication.clipboard().setText(text)
        self._flash_copied(row.key, "copy")
        if row.node_id:
            self.copyRequested.emit(row.node_id)

    def _flash_copied(self, key: str, action: str) -> None:
        self.delegate.mark_copied(key, action)
        self.list.viewport().update()
        self._copied_timer.start(1700)

    def trigger(self, key: str, action: str) -> None:
        """Run a row action as if its button was clicked (keyboard and menu path)."""
        self._on_action(key, action)

    # --- editing -------------------------------------------------------------------------

    def start_edit(self, key: str) -> MessageEditor | None:
        index = self.model.index_of(key)
        if index < 0 or self._busy:
            return None
        row = self.model.row_at(index)
        if row.kind != RowKind.USER:
            return None
        model_index = self.model.index(index)
        self.list.scrollTo(model_index)
        self.list.openPersistentEditor(model_index)
        editor = self.editor_for(key)
        if editor is not None:
            editor.setFocus()
        return editor

    def editor_for(self, key: str) -> MessageEditor | None:
        """The open editor of a message, if any."""
        return self.delegate.editor(key)

    def _edit_submitted(self, key: str, text: str) -> None:
        if self._busy:
            return
        index = self.model.index_of(key)
        if index < 0:
            return
        row = self.model.row_at(index)
        self._close_editor(key)
        if row.node_id and text.strip() and text != row.text:
            self.editRequested.emit(row.node_id, text)

    def _close_editor(self, key: str) -> None:
        index = self.model.index_of(key)
        if index >= 0:
            self.list.closePersistentEditor(self.model.index(index))
        self.delegate.forget_editor(key)
        self.scroller.relayout()
        self.list.setFocus()

    def _editor_drafts(self) -> dict[str, str]:
        drafts: dict[str, str] = {}
        for key in self.delegate.editing_keys():
            editor = self.editor_for(key)
            if editor is not None:
                drafts[key] = editor.text()
        return drafts

    def _reopen_editors(self, drafts: dict[str, str]) -> None:
        for key, text in drafts.items():
            if self.model.index_of(key) >= 0 and self.editor_for(key) is None:
                self.delegate.forget_editor(key)
                editor = self.start_edit(key)
                if editor is not None:
                    editor.set_text(text)
            elif self.model.index_of(key) < 0:
                self.delegate.forget_editor(key)

    # --- keyboard and menu ---------------------------------------------------------------

    def _current_row(self) -> ChatRow | None:
        index = self.list.currentIndex()
        if not index.isValid() or index.row() >= self.model.rowCount():
            return None
        return self.model.row_at(index.row())

    def handle_key(self, event: QKeyEvent) -> bool:
        """A key on the focused message (see `shortcuts`); True when it was one."""
        if event.matches(QKeySequence.StandardKey.Copy) and self.selector.copy():
            return True  # part of a message is selected: that part, not the whole message
        if event.key() in MODIFIER_KEYS:
            return False  # Ctrl on its way to Ctrl+C is not a move of the keyboard focus
        if not self.delegate.keyboard_focus:
            self.delegate.keyboard_focus = True
            self.list.viewport().update()
        if event.key() == Qt.Key.Key_End and not event.modifiers():
            self.scroll_to_bottom()
            return True
        row = self._current_row()
        if row is None:
            return False
        action = key_action(event, row, self.delegate)
        if action is None:
            return False
        if action:
            self.trigger(row.key, action)
        return True

    def open_menu(self, index: int, global_pos: QPoint) -> QMenu:
        menu = self.context_menu(self.model.row_at(index).key)
        menu.popup(global_pos)  # not exec(): no nested event loop under qasync
        self._menu = menu
        return menu

    def context_menu(self, key: str) -> QMenu:
        """Every action of a message, with its shortcut: the keyboard way to all of them."""
        row = self.model.row_at(self.model.index_of(key))
        menu = QMenu(self)
        menu.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        selected = self.selector.has_selection()
        if selected:
            copy_part = QAction("Copy", menu)
            copy_part.setShortcut(QKeySequence(QKeySequence.StandardKey.Copy))
            copy_part.setShortcutVisibleInContextMenu(True)
            copy_part.triggered.connect(lambda _checked=False: self.selector.copy())
            menu.addAction(copy_part)
        for action_id, label, shortcut in menu_actions(row, self.delegate):
            whole = selected and action_id == "copy"  # Ctrl+C copies the selection then
            hint = "" if whole else shortcut
            action = QAction("Copy message" if whole else label, menu)
            if hint:
                action.setShortcut(QKeySequence(hint))
                action.setShortcutVisibleInContextMenu(True)
            action.setEnabled(self.delegate.action_enabled(row, action_id)
                              or action_id in ("copy", "toggle") or action_id.startswith("code:"))
            key = row.key
            action.triggered.connect(lambda _checked=False, a=action_id, k=key: self.trigger(k, a))
            menu.addAction(action)
        self.menuRequested.emit(row.key, menu)
        return menu

    def open_reader(self, key: str) -> QDialog | None:
        """The message in a small non-modal window, to read and select from at leisure."""
        index = self.model.index_of(key)
        if index < 0:
            return None
        row = self.model.row_at(index)
        if self._reader is None:
            self._reader = MessageReader(self)
        self._reader.show_row(row)
        return self._reader

    def scroll_to_bottom(self) -> None:
        self.scroller.scroll_to_bottom()

    def reveal(self, key: str, needle: str = "") -> bool:
        """Scroll message `key` into view, make it the current one and select the first
        place its text holds `needle`; False when the message is not on the path shown."""
        return self._search_hit.reveal(key, needle)

    def forget_revealed(self) -> None:
        """The search that found a message was cleared: the match it selected goes."""
        self._search_hit.forget()

    def at_bottom(self) -> bool:
        return self.scroller.at_bottom()

    # --- the list's owner (see chat_list.ChatListOwner) ----------------------------------

    def capture_anchor(self) -> Anchor:
        return self.scroller.capture_anchor()

    def resized(self, anchor: Anchor) -> None:
        self.scroller.resized(anchor)

    def hold_background(self) -> None:
        """Measure nothing off screen for a moment (another session is about to show)."""
        self.scroller.hold_background()

    # --- introspection for tests and benchmarks ------------------------------------------

    def row_keys(self) -> list[str]:
        return [r.key for r in self.model.rows]

    def row_rect(self, key: str) -> QRectF:
        index = self.model.index_of(key)
        if index < 0:
            return QRectF()
        return QRectF(self.list.visualRect(self.model.index(index)))

    def button_rect(self, key: str, action: str) -> QRectF:
        """Where an action's button is, in viewport coordinates (empty when absent)."""
        index = self.model.index_of(key)
        if index < 0:
            return QRectF()
        row = self.model.row_at(index)
        origin = self.list.visualRect(self.model.index(index)).topLeft()
        if action.startswith("code:"):
            body = self.delegate.layout(row).body
            block = int(action.split(":", 1)[1])
            if body is None or block >= len(body.code_blocks):
                return QRectF()
            layout = self.delegate.layout(row)
            return body.code_blocks[block].copy_rect.translated(
                layout.body_origin).translated(origin.x(), origin.y())
        button = self.delegate.button(row, action)
        if button is None:
            return QRectF()
        return button.rect.translated(origin.x(), origin.y())

    @property
    def repaint_count(self) -> int:
        """Stream flushes painted."""
        return self.stream.repaint_count

    def measured_count(self) -> int:
        return sum(1 for r in self.model.rows if self.delegate.is_measured(r))

