"""Settings → Tools: the MCP servers, each with its status (starting, ready, failed with the
server's last output), its tools (a tool a provider would refuse says why; any tool can be
protected from aging), its default for tool calls (ask, allow, deny), enabled or not, restart
and remove; a server added by hand (a command to run, or a URL) or imported from a Claude
Desktop / Cursor `mcpServers` JSON, pasted or chosen. Every service call is awaited on the
loop; the list follows the servers' states as they change."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QPlainTextEdit,
    QPushButton,
    QScrollArea,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from ...tools.mcp.config import ConfigError, ImportResult, ServerConfig
from ...tools.mcp.runtime import ServerState
from ..common.safe_controls import ask_before, guard_wheel, never_default

if TYPE_CHECKING:
    from ...services.mcp.service import McpService
    from ..common.tasks import BackgroundTasks

POLICIES = (("ask", "Ask every time"), ("allow", "Allow"), ("deny", "Deny"))
STATUS_WORDS = {"stopped": "not started", "starting": "starting…", "ready": "ready",
                "failed": "failed"}
INTRO = (
    "Tools from MCP servers join the built-in ones in every chat where the server is enabled. "
    "A server starts when a chat first needs it."
)


def parse_pairs(text: str, sep: str) -> dict[str, str]:
    """`KEY=VALUE` (or `Header: value`) lines; blank lines are skipped."""
    out: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        key, found, value = line.partition(sep)
        if not found or not key.strip():
            raise ConfigError(f"line {number}: expected NAME{sep}VALUE, got {line.strip()!r}")
        out[key.strip()] = value.strip()
    return out


def describe_import(result: ImportResult) -> str:
    added = ", ".join(c.name for c in result.servers) or "nothing"
    text = f"Added {added}."
    if result.problems:
        text += " Skipped: " + "; ".join(result.problems)
    return text


class ToolsPage(QWidget):
    changed = Signal()  # a server was added, removed or changed

    def __init__(self, mcp: McpService, tasks: BackgroundTasks,
                 parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("ToolsPage")
        self._mcp = mcp
        self._tasks = tasks
        self._filling = False
        self._unsubscribe: Callable[[], None] | None = None

        intro = QLabel(INTRO)
        intro.setObjectName("DialogMuted")
        intro.setWordWrap(True)
        self.servers = QListWidget()
        self.servers.setAccessibleName("MCP servers")
        self.servers.setMaximumHeight(110)
        self.servers.currentItemChanged.connect(lambda *_: self._show_selected())
        self.empty = QLabel("No MCP servers yet: add one below, or import a configuration.")
        self.empty.setObjectName("DialogMuted")

        # --- the selected server ---
        self.where = QLabel()
        self.where.setObjectName("DialogMuted")
        self.where.setWordWrap(True)
        self.where.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.status = QLabel()
        self.status.setWordWrap(True)
        self.status.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.output = QPlainTextEdit()
        self.output.setReadOnly(True)
        self.output.setAccessibleName("The server's last output")
        self.output.setMaximumHeight(80)
        self.policy = QComboBox()
        for key, label in POLICIES:
            self.policy.addItem(label, key)
        self.policy.setAccessibleName("Default for tool calls")
        self.policy.currentIndexChanged.connect(lambda _i: self._policy_chosen())
        self.enabled = QCheckBox("Enabled in every chat")
        self.enabled.toggled.connect(self._enabled_toggled)
        self.restart_button = QPushButton("Restart")
        self.restart_button.clicked.connect(self._restart)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self._remove)
        self.tools = QTreeWidget()
        self.tools.setHeaderLabels(["Tool", "Protected", "Note"])
        self.tools.setRootIsDecorated(False)
        self.tools.setAccessibleName("The server's tools")
        self.tools.setMinimumHeight(110)
        self.tools.headerItem().setToolTip(1, "Kept whole in the context however old it gets")
        self.tools.itemChanged.connect(self._tool_changed)
        row = QHBoxLayout()
        row.addWidget(QLabel("Tool calls:"))
        row.addWidget(self.policy)
        row.addWidget(self.enabled)
        row.addStretch(1)
        row.addWidget(self.restart_button)
        row.addWidget(self.remove_button)
        self.details = QGroupBox("Server")
        details = QVBoxLayout(self.details)
        details.addWidget(self.where)
        details.addWidget(self.status)
        details.addWidget(self.output)
        details.addLayout(row)
        details.addWidget(self.tools)

        # --- add by hand ---
        self.name_field = QLineEdit()
        self.name_field.setPlaceholderText("e.g. files")
        self.kind = QComboBox()
        self.kind.addItem("A command to run (stdio)", "stdio")
        self.kind.addItem("A URL (streamable HTTP)", "http")
        self.kind.addItem("A URL (SSE, older servers)", "sse")
        self.kind.currentIndexChanged.connect(lambda _i: self._kind_chosen())
        self.command_field = QLineEdit()
        self.command_field.setPlaceholderText("npx -y @modelcontextprotocol/server-filesystem ~/x")
        self.env_field = QPlainTextEdit()
        self.env_field.setPlaceholderText("KEY=value, one a line (kept in the keychain)")
        self.env_field.setMaximumHeight(54)
        self.cwd_field = QLineEdit()
        self.cwd_field.setPlaceholderText("working folder (optional)")
        self.url_field = QLineEdit()
        self.url_field.setPlaceholderText("https://example.com/mcp")
        self.headers_field = QPlainTextEdit()
        self.headers_field.setPlaceholderText("Header: value, one a line (kept in the keychain)")
        self.headers_field.setMaximumHeight(54)
        self.add_policy = QComboBox()
        for key, label in POLICIES:
            self.add_policy.addItem(label, key)
        self.add_button = QPushButton("Add server")
        self.add_button.clicked.connect(self._add)
        self.add_message = QLabel()
        self.add_message.setWordWrap(True)
        add_box = QGroupBox("Add a server")
        self.add_form = QFormLayout(add_box)
        self.add_form.addRow("Name", self.name_field)
        self.add_form.addRow("Kind", self.kind)
        self.add_form.addRow("Command", self.command_field)
        self.add_form.addRow("Environment", self.env_field)
        self.add_form.addRow("Folder", self.cwd_field)
        self.add_form.addRow("URL", self.url_field)
        self.add_form.addRow("Headers", self.headers_field)
        self.add_form.addRow("Tool calls", self.add_policy)
        self.add_form.addRow(self.add_button, self.add_message)

        # --- import ---
        self.import_text = QPlainTextEdit()
        self.import_text.setPlaceholderText('Paste {"mcpServers": {…}} from Claude Desktop '
                                            "or Cursor")
        self.import_text.setMaximumHeight(70)
        self.import_button = QPushButton("Import pasted")
        self.import_button.clicked.connect(self._import_pasted)
        self.import_file_button = QPushButton("Choose a file…")
        self.import_file_button.clicked.connect(self._choose_file)
        self.import_message = QLabel()
        self.import_message.setWordWrap(True)
        import_box = QGroupBox("Import a configuration")
        imports = QVBoxLayout(import_box)
        imports.addWidget(self.import_text)
        buttons = QHBoxLayout()
        buttons.addWidget(self.import_button)
        buttons.addWidget(self.import_file_button)
        buttons.addStretch(1)
        imports.addLayout(buttons)
        imports.addWidget(self.import_message)

        inner = QWidget()
        body = QVBoxLayout(inner)
        body.setContentsMargins(12, 12, 12, 12)
        body.addWidget(intro)
        body.addWidget(self.servers)
        body.addWidget(self.empty)
        body.addWidget(self.details)
        body.addWidget(add_box)
        body.addWidget(import_box)
        body.addStretch(1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(inner)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        outer.addWidget(scroll)

        never_default(self.findChildren(QPushButton))  # Enter never restarts or removes
        guard_wheel(self)  # scrolling the page over "Tool calls" does not change it
        self.confirmation: QMessageBox | None = None
        self._kind_chosen()
        self.refresh()
        self._tasks.spawn(self._load(), name="tools-page")

    # --- the list ------------------------------------------------------------------

    async def _load(self) -> None:
        await self._mcp.ensure_loaded()
        if self._unsubscribe is None:
            self._unsubscribe = self._mcp.subscribe(lambda _state: self.refresh())
        self.refresh()

    def closeEvent(self, event: object) -> None:  # pragma: no cover - Qt calls it
        self.stop_listening()

    def stop_listening(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def selected_name(self) -> str | None:
        item = self.servers.currentItem()
        return str(item.data(Qt.ItemDataRole.UserRole)) if item is not None else None

    def select(self, name: str) -> None:
        for i in range(self.servers.count()):
            item = self.servers.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                self.servers.setCurrentItem(item)
                return

    def refresh(self) -> None:
        """The list from the service's configuration and states, keeping the selection."""
        chosen = self.selected_name()
        states = self._mcp.states()
        self._filling = True
        try:
            self.servers.clear()
            for config in self._mcp.configs():
                state = states.get(config.name, ServerState(config.name))
                label = f"{config.name} — {STATUS_WORDS.get(state.status, state.status)}"
                if not config.enabled:
                    label += " (disabled)"
                item = QListWidgetItem(label)
                item.setData(Qt.ItemDataRole.UserRole, config.name)
                item.setToolTip(config.where)
                self.servers.addItem(item)
        finally:
            self._filling = False
        has = self.servers.count() > 0
        self.empty.setVisible(not has)
        self.servers.setVisible(has)
        if chosen is not None:
            self.select(chosen)
        if self.servers.currentItem() is None and has:
            self.servers.setCurrentRow(0)
        self._show_selected()

    def _show_selected(self) -> None:
        if self._filling:
            return
        name = self.selected_name()
        self.details.setVisible(name is not None)
        if name is None:
            return
        try:
            config = self._mcp.config(name)
        except LookupError:
            return
        state = self._mcp.state(name)
        self._filling = True
        try:
            self.details.setTitle(name)
            self.where.setText(config.where)
            words = STATUS_WORDS.get(state.status, state.status)
            status = f"Status: {words}"
            if state.status == "ready" and state.server_info:
                status += f" ({state.server_info})"
            if state.error:
                status += f" — {state.error}"
            self.status.setText(status)
            self.output.setPlainText(state.stderr_tail)
            self.output.setVisible(bool(state.stderr_tail))
            self.policy.setCurrentIndex(max(0, self.policy.findData(config.policy)))
            self.enabled.setChecked(config.enabled)
            protected = set(self._mcp.protected())
            self.tools.clear()
            tools = state.tools or self._mcp._tools_of(name)  # the last listing when stopped
            for tool in tools:
                item = QTreeWidgetItem([tool.name, "", tool.problem or tool.description])
                item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                item.setCheckState(1, Qt.CheckState.Checked if (name, tool.name) in protected
                                   else Qt.CheckState.Unchecked)
                if tool.problem:
                    item.setToolTip(2, f"Not offered to models: {tool.problem}")
                    item.setText(2, f"Not offered: {tool.problem}")
                self.tools.addTopLevelItem(item)
            self.tools.resizeColumnToContents(0)
        finally:
            self._filling = False

    # --- acting on the selected server ---------------------------------------------

    def _run(self, work: Callable[[], Awaitable[object]], label: QLabel | None = None) -> None:
        async def go() -> None:
            try:
                await work()
            except (ConfigError, LookupError, OSError) as exc:
                (label or self.status).setText(str(exc))
                return
            self.refresh()
            self.changed.emit()

        self._tasks.spawn(go(), name="tools-page-action")

    def _policy_chosen(self) -> None:
        name = self.selected_name()
        policy = self.policy.currentData()
        if self._filling or name is None:
            return
        self._run(lambda: self._mcp.set_policy(name, policy))

    def _enabled_toggled(self, on: bool) -> None:
        name = self.selected_name()
        if self._filling or name is None:
            return
        self._run(lambda: self._mcp.set_enabled(name, on))

    def _restart(self) -> None:
        name = self.selected_name()
        if name is not None:
            self.status.setText("Status: starting…")
            self._run(lambda: self._mcp.restart(name))

    def _remove(self) -> None:
        """Asks first (Cancel is the default); nothing is removed by a stray Enter."""
        name = self.selected_name()
        if name is None:
            return
        self.confirmation = ask_before(
            self, "Remove server", f"Remove the MCP server “{name}”?", "Remove",
            lambda: self._run(lambda: self._mcp.remove(name)),
            detail="Its tools leave every chat; what they returned stays in the history.")

    def _tool_changed(self, item: QTreeWidgetItem, column: int) -> None:
        name = self.selected_name()
        if self._filling or name is None or column != 1:
            return
        on = item.checkState(1) == Qt.CheckState.Checked
        tool = item.text(0)
        self._run(lambda: self._mcp.set_protected(name, tool, on))

    # --- adding --------------------------------------------------------------------

    def _kind_chosen(self) -> None:
        stdio = self.kind.currentData() == "stdio"
        for field, show in ((self.command_field, stdio), (self.env_field, stdio),
                            (self.cwd_field, stdio), (self.url_field, not stdio),
                            (self.headers_field, not stdio)):
            self.add_form.setRowVisible(field, show)

    def config_from_form(self) -> ServerConfig:
        """The server the form describes, or ConfigError saying what is wrong."""
        name = self.name_field.text().strip()
        kind = self.kind.currentData()
        policy = self.add_policy.currentData()
        if kind == "stdio":
            try:
                words = shlex.split(self.command_field.text())
            except ValueError as exc:
                raise ConfigError(f"the command: {exc}") from exc
            if not words:
                raise ConfigError("a stdio server needs a command to run")
            env: Mapping[str, str] = parse_pairs(self.env_field.toPlainText(), "=")
            return ServerConfig(name=name, transport="stdio", command=words[0],
                                args=tuple(words[1:]), env=env,
                                cwd=self.cwd_field.text().strip(), policy=policy)
        headers = parse_pairs(self.headers_field.toPlainText(), ":")
        return ServerConfig(name=name, transport="sse" if kind == "sse" else "http",
                            url=self.url_field.text().strip(), headers=headers, policy=policy)

    def _add(self) -> None:
        try:
            config = self.config_from_form()
        except ConfigError as exc:
            self.add_message.setText(str(exc))
            return

        async def add() -> None:
            await self._mcp.add(config)
            self.add_message.setText(f"Added {config.name}.")
            self.name_field.clear()
            self.command_field.clear()
            self.env_field.clear()
            self.cwd_field.clear()
            self.url_field.clear()
            self.headers_field.clear()
            self.refresh()
            self.select(config.name)

        self._run(add, self.add_message)

    # --- importing -----------------------------------------------------------------

    def _import_pasted(self) -> None:
        self.import_json(self.import_text.toPlainText())

    def import_json(self, text: str) -> None:
        async def go() -> None:
            result = await self._mcp.import_json(text)
            self.import_message.setText(describe_import(result))
            if result.servers:
                self.import_text.clear()

        self._run(go, self.import_message)

    def _choose_file(self) -> None:
        dialog = QFileDialog(self, "Import MCP servers", str(Path.home()),
                             "JSON (*.json);;All files (*)")
        dialog.setFileMode(QFileDialog.FileMode.ExistingFile)
        dialog.fileSelected.connect(self.import_file)
        dialog.open()

    def import_file(self, path: str) -> None:
        async def go() -> None:
            result = await self._mcp.import_file(Path(path))
            self.import_message.setText(describe_import(result))

        self._run(go, self.import_message)
