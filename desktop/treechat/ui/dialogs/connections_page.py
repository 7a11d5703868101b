"""Settings → Connections: every connection with its state (ready, detected, unreachable, not
checked yet, needs a key) and its models, the bundled model among them (read-only); Add,
Edit (`connection_editor`), Test and Remove.

Everything that talks to a server, the keychain or the store runs as a task on the window's
loop (the services do their blocking parts on worker threads); the page and the editor stay
usable while a server takes its time or never answers. Input errors are shown in the
service's own words, a failed test in the provider's."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...services.models.connections import KIND_LABELS, Connection, ConnectionProblem
from ..common.safe_controls import ask_before, never_default
from .connection_editor import ConnectionEditor
from .connection_states import (
    BUNDLED_KIND,
    BUNDLED_TIP,
    SHORT_KINDS,
    state_line,
    state_text,
)

if TYPE_CHECKING:
    from ...services.models.connections import ConnectionService
    from ..common.tasks import BackgroundTasks

STATE_ROOM = 24  # the State column's padding around its text
ID_ROLE = Qt.ItemDataRole.UserRole + 1


def where(conn: Connection) -> str:
    """A connection by its name and its address (the list's Kind column may cut it)."""
    return f"{conn.display_label} · {conn.base_url}" if conn.base_url else conn.display_label


class ConnectionsPage(QWidget):
    """The Connections tab of Settings."""

    changed = Signal()

    def __init__(
        self,
        connections: ConnectionService,
        tasks: BackgroundTasks,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._connections = connections
        self._tasks = tasks
        self.editor: ConnectionEditor | None = None
        self.confirmation: QMessageBox | None = None
        self._reloading = False
        intro = QLabel(
            "Servers on this machine (Ollama, LM Studio, llama.cpp) are found on their usual "
            "ports. Add any OpenAI-compatible server by its URL, or a hosted provider with "
            "its key; keys are kept in the system keychain."
        )
        intro.setObjectName("DialogMuted")
        intro.setWordWrap(True)
        self.list = QTreeWidget()
        self.list.setAccessibleName("Connections")
        self.list.setColumnCount(3)
        self.list.setHeaderLabels(["Connection", "Kind", "State"])
        self.list.setRootIsDecorated(False)
        self.list.setUniformRowHeights(True)
        self.list.currentItemChanged.connect(lambda *_: self._selected())
        self.list.itemDoubleClicked.connect(lambda *_: self.edit())
        header = self.list.header()
        header.setStretchLastSection(True)
        self.add_button = QPushButton("Add…")
        self.add_button.setAccessibleName("Add a connection")
        self.add_button.clicked.connect(self.add)
        self.edit_button = QPushButton("Edit…")
        self.edit_button.setAccessibleName("Edit connection")
        self.edit_button.clicked.connect(self.edit)
        self.test_button = QPushButton("Test")
        self.test_button.setAccessibleName("Test connection")
        self.test_button.setToolTip("List its models and make a one-token call")
        self.test_button.clicked.connect(self.test)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setAccessibleName("Remove connection")
        self.remove_button.clicked.connect(self.remove)
        self.status = QLabel("")
        self.status.setAccessibleName("Connection status")
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        row = QHBoxLayout()
        buttons = (self.add_button, self.edit_button, self.test_button, self.remove_button)
        never_default(buttons)  # Test turns itself off; focus then lands on Remove
        for button in buttons:
            row.addWidget(button)
        row.addStretch(1)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(12, 14, 12, 12)
        layout.addWidget(intro)
        layout.addWidget(self.list, 1)
        layout.addLayout(row)
        layout.addWidget(self.status)
        # The service keeps its listeners; once the page is gone its notices are dropped.
        alive = [True]
        self.destroyed.connect(lambda: alive.__setitem__(0, False))
        connections.add_listener(lambda: self._changed() if alive[0] else None)
        self.reload()

    # --- the list ------------------------------------------------------------------

    def _changed(self) -> None:
        self.reload()
        self.changed.emit()

    def reload(self) -> None:
        """Fill the list from the connections' statuses (no I/O)."""
        current = self.current_id()
        self._reloading = True  # what the status line says stays while the list is refilled
        self.list.clear()
        for status in self._connections.statuses():
            conn = status.connection
            bundled = conn.kind == "bundled"
            kind = BUNDLED_KIND if bundled else SHORT_KINDS.get(
                conn.kind, KIND_LABELS.get(conn.kind, conn.kind))
            if conn.base_url:
                kind = f"{kind} · {conn.base_url}"
            # the bundled model by the picker's name for it, "Bundled · SmolLM2 135M"
            name = " · ".join([conn.display_label, *(m.label or m.name for m in conn.offered())]
                              ) if bundled else conn.display_label
            item = QTreeWidgetItem(self.list, [name, kind, state_text(status)])
            item.setData(0, ID_ROLE, conn.id)
            tip = BUNDLED_TIP if bundled else state_line(status)
            for column in range(3):
                item.setToolTip(column, tip if column == 2 else item.text(column))
            if conn.id == current:
                self.list.setCurrentItem(item)
        self._reloading = False
        self._fit_columns()
        self._update_buttons()

    def _fit_columns(self) -> None:
        """Name and kind as wide as their text, but the State column always wide enough to
        be read whole: a long address in Kind gives way (its tooltip keeps it)."""
        for column in (0, 1):
            self.list.resizeColumnToContents(column)
        metrics = self.list.fontMetrics()
        items = [self.list.topLevelItem(i) for i in range(self.list.topLevelItemCount())]
        state = max((metrics.horizontalAdvance(it.text(2)) for it in items if it is not None),
                    default=0) + STATE_ROOM
        room = self.list.viewport().width() - self.list.columnWidth(0) - state
        if self.list.columnWidth(1) > room:
            self.list.setColumnWidth(1, max(room, metrics.horizontalAdvance("OpenAI-compatible")))

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit_columns()

    def _selected(self) -> None:
        """The selected connection's whole state in the status line (the column is short)."""
        status = self._connections.status(self.current_id() or "")
        if status is not None and not self._reloading:
            self.status.setText(BUNDLED_TIP if status.connection.kind == "bundled"
                                else f"{where(status.connection)}: {state_line(status)}")
        self._update_buttons()

    def current_id(self) -> str | None:
        item = self.list.currentItem()
        return str(item.data(0, ID_ROLE)) if item is not None else None

    def select(self, ident: str) -> None:
        for row in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(row)
            if item is not None and item.data(0, ID_ROLE) == ident:
                self.list.setCurrentItem(item)
                return

    def row_text(self, ident: str) -> str:
        for row in range(self.list.topLevelItemCount()):
            item = self.list.topLevelItem(row)
            if item is not None and item.data(0, ID_ROLE) == ident:
                return " | ".join(item.text(c) for c in range(3))
        return ""

    def _saved(self, ident: str | None) -> Connection | None:
        return next((c for c in self._connections.saved() if c.id == ident), None)

    def _update_buttons(self) -> None:
        ident = self.current_id()
        conn = self._connections.find(ident) if ident else None
        read_only = conn is None or conn.kind == "bundled"  # the bundled model is just there
        self.edit_button.setEnabled(not read_only and conn is not None and not conn.detected)
        self.test_button.setEnabled(not read_only)
        self.remove_button.setEnabled(self._saved(ident) is not None)

    # --- actions -------------------------------------------------------------------

    def add(self) -> None:
        self._open_editor(None)

    def edit(self) -> None:
        ident = self.current_id()
        saved = self._saved(ident)
        if saved is not None:
            self._open_editor(saved)
            return
        conn = self._connections.find(ident) if ident else None
        if conn is not None and conn.kind == "hosted":
            # A provider whose key was stored before connections existed: save it as one.
            editor = self._open_editor(None)
            editor.kind.setCurrentIndex(editor.kind.findData("hosted"))
            editor.provider.setCurrentIndex(max(0, editor.provider.findData(conn.provider)))

    def _open_editor(self, conn: Connection | None) -> ConnectionEditor:
        editor = ConnectionEditor(self._connections, self._tasks, conn, self)
        editor.saved.connect(self.status.setText)
        editor.finished.connect(lambda _: self._editor_closed(editor))
        self.editor = editor
        editor.open()
        return editor

    def _editor_closed(self, editor: ConnectionEditor) -> None:
        if self.editor is editor:
            self.editor = None
        editor.deleteLater()
        self.reload()

    def test(self) -> None:
        ident = self.current_id()
        if ident is None:
            return
        self.test_button.setEnabled(False)
        self.status.setText("Testing…")
        self._tasks.spawn(self._test(ident), name="connection-test")

    async def _test(self, ident: str) -> None:
        try:
            outcome = await self._connections.test(ident)
        except ConnectionProblem as exc:
            self.status.setText(str(exc))
            return
        except Exception as exc:  # a broken network stack should not take Settings down
            self.status.setText(f"Could not test: {exc}")
            return
        finally:
            self._update_buttons()
        if outcome.ok:
            reply = f": “{outcome.reply.strip()}”" if outcome.reply.strip() else ""
            self.status.setText(f"{outcome.message} ({outcome.model}){reply}")
        else:
            detail = outcome.detail if outcome.detail and outcome.detail != outcome.message else ""
            self.status.setText(f"{outcome.message}" + (f": {detail}" if detail else ""))

    def remove(self) -> None:
        """Asks first (Cancel is the default); nothing is removed by a stray Enter."""
        ident = self.current_id()
        saved = self._saved(ident)
        if saved is None or ident is None:
            return
        self.confirmation = ask_before(
            self, "Remove connection", f"Remove the connection “{saved.display_label}”?",
            "Remove", lambda: self._confirmed_remove(ident),
            detail="Its key leaves the keychain; chats that used it keep their history.")

    def _confirmed_remove(self, ident: str) -> None:
        self.confirmation = None
        self.remove_button.setEnabled(False)
        self._tasks.spawn(self._remove(ident), name="connection-remove")

    async def _remove(self, ident: str) -> None:
        try:
            conn = await self._connections.remove(ident)
        except ConnectionProblem as exc:
            self.status.setText(str(exc))
            return
        self.status.setText(f"{conn.display_label} removed; chats that used it keep their "
                            "history")
        self.reload()
