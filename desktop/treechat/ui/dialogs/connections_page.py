"""Settings → Connections: every connection with its state (ready, detected, unreachable, not
checked yet, needs a key) and its models; Add, Edit, Test and Remove. Adding an
OpenAI-compatible server asks only for its URL; Ollama, LM Studio and llama.cpp come with
their usual local address filled in; a hosted provider asks for its API key, which goes to
the keychain only (`set_key`), never into Treechat's files.

Everything that talks to a server, the keychain or the store runs as a task on the window's
loop (the services do their blocking parts on worker threads); the page and the editor stay
usable while a server takes its time or never answers. Input errors are shown in the
service's own words, a failed test in the provider's."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...services.models.connections import (
    KIND_LABELS,
    PROVIDER_LABELS,
    SERVER_KINDS,
    Connection,
    ConnectionKind,
    ConnectionProblem,
    ConnectionStatus,
)
from ..common.safe_controls import ask_before, never_default

if TYPE_CHECKING:
    from ...services.models.connections import ConnectionService
    from ..common.tasks import BackgroundTasks

# The kinds a user adds, in the order the editor offers them.
ADDABLE_KINDS: tuple[ConnectionKind, ...] = (
    "openai-compatible", "ollama", "lmstudio", "llamacpp", "hosted",
)
DEFAULT_URLS = {
    "openai-compatible": "",
    "ollama": "http://127.0.0.1:11434",
    "lmstudio": "http://127.0.0.1:1234",
    "llamacpp": "http://127.0.0.1:8080",
}
STATE_TEXT = {
    "ready": "Ready",
    "detected": "Detected on this machine",
    "unreachable": "Unreachable",
    "unchecked": "Not checked yet",
    "needs-key": "Needs an API key",
}
ID_ROLE = Qt.ItemDataRole.UserRole + 1


def name_from_url(url: str) -> str:
    """A connection name for a server known only by its URL: "localhost-1234"."""
    try:
        parts = urlsplit(url.strip() if "://" in url else f"http://{url.strip()}")
        host = parts.hostname or "server"
        port = parts.port
    except ValueError:
        return "server"
    return f"{host}-{port}" if port else host


def parse_headers(text: str) -> tuple[tuple[str, str], ...]:
    """ "X-Team: blue; X-Other: 1" as header pairs (raises `ConnectionProblem`)."""
    out = []
    for part in text.split(";"):
        if not part.strip():
            continue
        name, sep, value = part.partition(":")
        if not sep or not name.strip() or any(c.isspace() for c in name.strip()):
            raise ConnectionProblem(
                f"{part.strip()!r} is not a header: write Name: value, separated by ';'"
            )
        out.append((name.strip(), value.strip()))
    return tuple(out)


def state_line(status: ConnectionStatus) -> str:
    conn = status.connection
    count = len(conn.offered())
    models = f"{count} model{'s' if count != 1 else ''}" if count else "no models listed"
    text = f"{STATE_TEXT.get(status.state, status.state)} · {models}"
    return f"{text} · {status.reason}" if status.reason else text


class ConnectionEditor(QDialog):
    """Adds a connection, or edits a saved one. Opened with `open()`."""

    saved = Signal(str)  # what happened, for the page's status line

    def __init__(
        self,
        connections: ConnectionService,
        tasks: BackgroundTasks,
        editing: Connection | None = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self._connections = connections
        self._tasks = tasks
        self._editing = editing
        self.setWindowTitle("Edit connection" if editing else "Add a connection")
        self.setAccessibleName(self.windowTitle())
        self.resize(480, 0)

        self.kind = QComboBox()
        self.kind.setAccessibleName("Kind")
        for kind in ADDABLE_KINDS:
            self.kind.addItem(KIND_LABELS[kind], kind)
        self.url = QLineEdit()
        self.url.setAccessibleName("Server URL")
        self.url.setPlaceholderText("http://127.0.0.1:1234/v1")
        self.name = QLineEdit()
        self.name.setAccessibleName("Name")
        self.name.setPlaceholderText("From the URL")
        self.provider = QComboBox()
        self.provider.setAccessibleName("Provider")
        self.provider.setEditable(True)  # any litellm provider, not only the known ones
        for provider, label in PROVIDER_LABELS.items():
            self.provider.addItem(label, provider)
        self.key = QLineEdit()
        self.key.setAccessibleName("API key")
        self.key.setEchoMode(QLineEdit.EchoMode.Password)
        self.key.setClearButtonEnabled(True)
        self.key.setPlaceholderText("Optional; kept in the system keychain")
        self.headers = QLineEdit()
        self.headers.setAccessibleName("Extra headers")
        self.headers.setPlaceholderText("Optional: X-Team: blue; X-Other: 1")
        self.error = QLabel("")
        self.error.setAccessibleName("Problem")
        self.error.setObjectName("DialogError")
        self.error.setWordWrap(True)
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)

        self.form = QFormLayout()
        self.form.addRow("Kind", self.kind)
        self.form.addRow("URL", self.url)
        self.form.addRow("Provider", self.provider)
        self.form.addRow("Name", self.name)
        self.form.addRow("API key", self.key)
        self.form.addRow("Headers", self.headers)

        self.buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.save_button = self.buttons.button(QDialogButtonBox.StandardButton.Save)
        self.save_button.setText("Save" if editing else "Add")
        self.buttons.accepted.connect(self.save)
        self.buttons.rejected.connect(self.reject)
        layout = QVBoxLayout(self)
        layout.addLayout(self.form)
        layout.addWidget(self.error)
        layout.addWidget(self.buttons)

        self.kind.currentIndexChanged.connect(self._kind_changed)
        if editing is not None:
            self._fill(editing)
        self._kind_changed()

    def _fill(self, conn: Connection) -> None:
        self.kind.setCurrentIndex(max(0, self.kind.findData(conn.kind)))
        self.kind.setEnabled(False)
        self.name.setText(conn.display_label)
        self.name.setEnabled(False)
        self.url.setText(conn.base_url)
        self.headers.setText("; ".join(f"{k}: {v}" for k, v in conn.headers))
        if conn.kind == "hosted":
            found = self.provider.findData(conn.provider)
            if found >= 0:
                self.provider.setCurrentIndex(found)
            else:
                self.provider.setEditText(conn.provider)
            self.provider.setEnabled(False)
        if conn.has_key:
            self.key.setPlaceholderText("Saved in the keychain (type to replace)")

    def selected_kind(self) -> str:
        return str(self.kind.currentData())

    def _kind_changed(self) -> None:
        kind = self.selected_kind()
        server = kind in SERVER_KINDS
        self.form.setRowVisible(self.url, server)
        self.form.setRowVisible(self.provider, kind == "hosted")
        # An OpenAI-compatible server needs nothing but its URL; the rest is optional.
        if self._editing is None and server:
            current = self.url.text().strip()
            if not current or current in DEFAULT_URLS.values():
                self.url.setText(DEFAULT_URLS[kind])
        self.key.setPlaceholderText(
            "Required; kept in the system keychain" if kind == "hosted"
            else "Optional; kept in the system keychain"
        )

    def _provider_id(self) -> str:
        text = self.provider.currentText().strip()
        index = self.provider.findText(text)
        return str(self.provider.itemData(index)) if index >= 0 else text.lower()

    def save(self) -> None:
        self.error.setText("")
        kind = self.selected_kind()
        url = self.url.text().strip() if kind in SERVER_KINDS else ""
        provider = self._provider_id() if kind == "hosted" else ""
        name = self.name.text().strip() or (
            provider if kind == "hosted" else name_from_url(url) if kind == "openai-compatible"
            else kind
        )
        # A hosted provider named after itself shares the keychain entry its key had before
        # connections existed, under the provider's own label.
        label = ""
        if not self.name.text().strip():
            if kind == "hosted":
                label = PROVIDER_LABELS.get(provider, "")
            elif kind != "openai-compatible":
                # "Ollama", addressed as ollama/llama3.2:3b
                label = next((v for k, v in KIND_LABELS.items() if k == kind), "")
        key = self.key.text().strip() or None
        if kind == "hosted" and self._editing is None and not key:
            self.error.setText("A hosted provider needs its API key.")
            return
        try:  # input errors at once, before anything is saved or sent
            headers = parse_headers(self.headers.text())
            if self._editing is None:
                self._connections.check_new(
                    kind, name, base_url=url, provider=provider, label=label, headers=headers
                )
        except ConnectionProblem as exc:
            self.error.setText(str(exc))
            return
        self.save_button.setEnabled(False)
        self.error.setText("Listing its models…" if kind in SERVER_KINDS else "Saving…")
        self._tasks.spawn(self._save(kind, name, url, provider, key, label, headers),
                          name="connection-save")

    async def _save(
        self, kind: str, name: str, url: str, provider: str, key: str | None, label: str,
        headers: tuple[tuple[str, str], ...],
    ) -> None:
        try:
            if self._editing is None:
                status = await self._connections.add(
                    kind, name, base_url=url, api_key=key, provider=provider, label=label,
                    headers=headers,
                )
            else:
                ident = self._editing.id
                if key:
                    await self._connections.set_key(ident, key)
                status = await self._connections.update(
                    ident, base_url=url or None, headers=headers
                )
        except ConnectionProblem as exc:
            self.error.setText(str(exc))
            self.save_button.setEnabled(True)
            return
        label = status.connection.display_label
        if status.state == "ready":
            self.saved.emit(f"{label} saved · {state_line(status)}")
        else:
            self.saved.emit(f"{label} saved, but its models could not be listed: "
                           f"{status.reason or STATE_TEXT.get(status.state, status.state)}")
        self.accept()


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
        self.list.currentItemChanged.connect(lambda *_: self._update_buttons())
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
        self.list.clear()
        for status in self._connections.statuses():
            conn = status.connection
            if conn.kind == "bundled":
                continue
            kind = KIND_LABELS.get(conn.kind, conn.kind)
            if conn.base_url:
                kind = f"{kind} · {conn.base_url}"
            item = QTreeWidgetItem(self.list, [conn.display_label, kind, state_line(status)])
            item.setData(0, ID_ROLE, conn.id)
            item.setToolTip(2, status.reason or state_line(status))
            if conn.id == current:
                self.list.setCurrentItem(item)
        for column in (0, 1):
            self.list.resizeColumnToContents(column)
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
        self.edit_button.setEnabled(conn is not None and not conn.detected)
        self.test_button.setEnabled(conn is not None)
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
