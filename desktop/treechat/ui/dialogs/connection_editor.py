"""Adding a connection, or editing a saved one: an OpenAI-compatible server by its URL
alone, Ollama, LM Studio and llama.cpp with their usual local address filled in, a hosted
provider with its API key (which goes to the keychain only). Input errors are shown at once,
in the service's own words, before anything is saved or sent."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
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
)
from .connection_states import STATE_TEXT, state_line

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
