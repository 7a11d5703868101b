"""Settings: API keys per provider (kept in the system keychain, shown masked, with a test
that makes one tiny request), the default model, the workspace folder, when the context is
compacted, and the theme. Opened with `open()`, never `exec()`."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from ...services.models.keys import KeyAccess, try_key
from ...services.retrieval.search_model import OFFLINE_LABEL, SearchModel
from ..common.safe_controls import guard_wheel
from ..common.tasks import BackgroundTasks

if TYPE_CHECKING:
    from ...services.mcp.service import McpService
    from ...services.models.catalog import ModelChoice
    from ...services.models.connections import ConnectionService
    from ...services.sync.service import SyncService
    from .connections_page import ConnectionsPage
    from .sync_page import SyncPage
    from .tools_page import ToolsPage

PROVIDER_NAMES = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "gemini": "Google Gemini",
    "mistral": "Mistral",
    "deepseek": "DeepSeek",
    "openrouter": "OpenRouter",
}

KEYCHAIN_INTRO = (
    "API keys are stored in your system keychain, never in Treechat's files. "
    "Leave a field empty to keep the saved key."
)
NO_KEYCHAIN_INTRO = (
    "No system keychain is available, so keys you enter are kept for this session only. "
    "Install or unlock a keychain (Secret Service, KWallet, macOS Keychain) to keep them."
)
SOURCE_PLACEHOLDERS = {
    "keyring": "Saved in the keychain (type to replace)",
    "environment": "From the environment (type to override)",
    "memory": "Kept for this session only",
    "none": "Not set",
}

KeyTester = Callable[[str, str], Awaitable[str | None]]
SearchModels = Callable[[], Awaitable[Sequence[SearchModel]]]  # the embedding models on offer


@dataclass(frozen=True, slots=True)
class SettingsValues:
    default_model: str | None
    workspace: str | None
    summarize_trigger: float  # share of the history budget (0..1)
    emergency_trigger: float
    theme: str  # system | light | dark
    # who writes summaries of folded history: "" offline, "session" the chat's model, or an id
    summarizer: str = ""
    search_model: SearchModel | None = None  # None: the offline default


class SettingsDialog(QDialog):
    saved = Signal(object)  # SettingsValues
    keysChanged = Signal()

    def __init__(
        self,
        keys: KeyAccess,
        providers: Sequence[str],
        choices: Sequence[ModelChoice],
        values: SettingsValues,
        *,
        tasks: BackgroundTasks,
        tester: KeyTester = try_key,
        parent: QWidget | None = None,
        connections: ConnectionService | None = None,
        mcp: McpService | None = None,
        sync: SyncService | None = None,
        search_models: SearchModels | None = None,
    ) -> None:
        super().__init__(parent)
        self.setWindowTitle("Settings")
        self.setAccessibleName("Settings")
        self.resize(640, 540)
        self._keys = keys
        self._tasks = tasks
        self._tester = tester
        # With connections, hosted providers are connections too (their keys set there):
        # the Connections tab replaces the page of per-provider key fields.
        self._providers = list(providers) if connections is None else []
        self.connections_page: ConnectionsPage | None = None
        self.key_fields: dict[str, QLineEdit] = {}
        self.key_status: dict[str, QLabel] = {}
        self.test_buttons: dict[str, QPushButton] = {}
        self._search_models_asked = False

        self.tabs = tabs = QTabWidget()
        if connections is not None:
            from .connections_page import ConnectionsPage

            self.connections_page = ConnectionsPage(connections, tasks)
            self.connections_page.changed.connect(self.keysChanged)
            tabs.addTab(self.connections_page, "Connections")
        else:
            tabs.addTab(self._providers_page(), "Providers")
        general = self._general_page(choices, values)
        tabs.addTab(general, "General")
        self.tools_page: ToolsPage | None = None
        if mcp is not None:
            from .tools_page import ToolsPage

            self.tools_page = ToolsPage(mcp, tasks)
            tabs.addTab(self.tools_page, "Tools")
        self.sync_page: SyncPage | None = None
        if sync is not None:
            from .sync_page import SyncPage

            self.sync_page = SyncPage(sync, tasks)
            tabs.addTab(self.sync_page, "Sync")

        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._save)
        buttons.rejected.connect(self.reject)
        self.save_button = buttons.button(QDialogButtonBox.StandardButton.Save)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(16, 14, 16, 14)
        layout.addWidget(tabs, 1)
        layout.addWidget(buttons)
        guard_wheel(self)  # scrolling over a setting never changes it
        if connections is None:
            self._tasks.spawn(self._load_statuses(), name="settings-key-status")
        if search_models is not None:
            # the servers are asked for their embedding models when the page is first shown
            def offer(index: int) -> None:
                if tabs.widget(index) is general and not self._search_models_asked:
                    self._search_models_asked = True
                    self._tasks.spawn(offer_search_models(weakref.ref(self), search_models),
                                      name="settings-search-models")

            tabs.currentChanged.connect(offer)
            offer(tabs.currentIndex())

    # --- pages ---------------------------------------------------------------------

    def _providers_page(self) -> QWidget:
        page = QWidget()
        grid = QGridLayout(page)
        grid.setContentsMargins(12, 14, 12, 12)
        grid.setHorizontalSpacing(10)
        grid.setVerticalSpacing(6)
        self.intro = QLabel(KEYCHAIN_INTRO)
        self.intro.setObjectName("DialogMuted")
        self.intro.setWordWrap(True)
        grid.addWidget(self.intro, 0, 0, 1, 3)
        grid.setRowMinimumHeight(0, 44)
        row = 1
        for provider in self._providers:
            name = PROVIDER_NAMES.get(provider, provider.title())
            label = QLabel(name)
            label.setMinimumWidth(110)
            field = QLineEdit()
            field.setEchoMode(QLineEdit.EchoMode.Password)
            field.setPlaceholderText("Not set")
            field.setAccessibleName(f"{name} API key")
            field.setClearButtonEnabled(True)
            test = QPushButton("Test")
            test.setAccessibleName(f"Test {name} key")
            test.setToolTip("Send one tiny request with this key")
            test.clicked.connect(lambda _=False, p=provider: self._test(p))
            status = QLabel("")
            status.setObjectName("DialogMuted")
            status.setWordWrap(True)
            status.setAccessibleName(f"{name} key status")
            grid.addWidget(label, row, 0)
            grid.addWidget(field, row, 1)
            grid.addWidget(test, row, 2)
            grid.addWidget(status, row + 1, 1, 1, 2)
            grid.setRowMinimumHeight(row + 1, 18)
            self.key_fields[provider] = field
            self.key_status[provider] = status
            self.test_buttons[provider] = test
            row += 2
        grid.setRowStretch(row, 1)
        grid.setColumnStretch(1, 1)
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QFrame.Shape.NoFrame)
        scroll.setWidget(page)
        return scroll

    def _general_page(self, choices: Sequence[ModelChoice], values: SettingsValues) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.setContentsMargins(12, 14, 12, 12)
        form.setVerticalSpacing(10)
        form.setLabelAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)

        self.default_model = QComboBox()
        self.default_model.setObjectName("SettingsCombo")
        self.default_model.setAccessibleName("Default model")
        for choice in choices:
            self.default_model.addItem(choice.label, choice.id)
        if values.default_model and self.default_model.findData(values.default_model) < 0:
            self.default_model.addItem(values.default_model, values.default_model)
        found = self.default_model.findData(values.default_model)
        self.default_model.setCurrentIndex(max(0, found))
        form.addRow("Default model", self.default_model)
        self.summarizer = QComboBox()
        self.summarizer.setAccessibleName("Summaries written by")
        self.summarizer.addItem("This computer, offline (extractive)", "")
        self.summarizer.addItem("The chat's own model", "session")
        for choice in choices:
            self.summarizer.addItem(choice.label, choice.id)
        if values.summarizer and self.summarizer.findData(values.summarizer) < 0:
            self.summarizer.addItem(values.summarizer, values.summarizer)
        self.summarizer.setCurrentIndex(max(0, self.summarizer.findData(values.summarizer)))
        self.summarizer.setToolTip("Written once per fold and kept in the commit; a model "
                                   "summarizer follows the chat's instructions")
        form.addRow("Summaries by", self.summarizer)
        self.search_model = QComboBox()
        self.search_model.setObjectName("SettingsCombo")
        self.search_model.setAccessibleName("Search by meaning with")
        self.search_model.addItem(OFFLINE_LABEL, None)
        if values.search_model is not None:
            self.search_model.addItem(values.search_model.name, values.search_model)
            self.search_model.setCurrentIndex(1)
        self.search_model.setToolTip("The model that embeds chats and knowledge for search: "
                                     "the embedding models your connections and model library "
                                     "offer are listed as they are found. Changing it embeds "
                                     "everything again in the background.")
        form.addRow("Search by meaning with", self.search_model)

        self.workspace = QLineEdit(values.workspace or "")
        self.workspace.setPlaceholderText("No folder: file tools are off")
        self.workspace.setAccessibleName("Workspace folder")
        browse = QPushButton("Choose…")
        browse.setAccessibleName("Choose workspace folder")
        browse.clicked.connect(self._browse)
        row = QHBoxLayout()
        row.addWidget(self.workspace, 1)
        row.addWidget(browse)
        form.addRow("Workspace folder", row)

        self.summarize_at = QSpinBox()
        self.summarize_at.setRange(30, 95)
        self.summarize_at.setSuffix(" %")
        self.summarize_at.setValue(round(values.summarize_trigger * 100))
        self.summarize_at.setAccessibleName("Compact at percent of history budget")
        self.summarize_at.setToolTip("Summarize older messages when the history reaches this "
                                     "share of its budget")
        form.addRow("Compact at", self.summarize_at)
        self.emergency_at = QSpinBox()
        self.emergency_at.setRange(50, 99)
        self.emergency_at.setSuffix(" %")
        self.emergency_at.setValue(round(values.emergency_trigger * 100))
        self.emergency_at.setAccessibleName("Force compaction at percent of the window")
        self.emergency_at.setToolTip("Compact harder when the whole request reaches this share "
                                     "of what the model can read")
        form.addRow("Force compaction at", self.emergency_at)

        self.theme = QComboBox()
        self.theme.setObjectName("SettingsCombo")
        self.theme.setAccessibleName("Theme")
        for label, mode in (("Follow the system", "system"), ("Light", "light"), ("Dark", "dark")):
            self.theme.addItem(label, mode)
        self.theme.setCurrentIndex(max(0, self.theme.findData(values.theme)))
        form.addRow("Theme", self.theme)
        return page

    # --- values --------------------------------------------------------------------

    def values(self) -> SettingsValues:
        summarize = self.summarize_at.value() / 100
        emergency = max(self.emergency_at.value() / 100, summarize + 0.05)
        workspace = self.workspace.text().strip()
        return SettingsValues(
            default_model=self.default_model.currentData(),
            workspace=workspace or None,
            summarize_trigger=summarize,
            emergency_trigger=min(0.99, emergency),
            theme=str(self.theme.currentData()),
            summarizer=str(self.summarizer.currentData() or ""),
            search_model=self.search_model.currentData(),
        )

    def _browse(self) -> None:
        chooser = QFileDialog(self, "Workspace folder", self.workspace.text())
        chooser.setFileMode(QFileDialog.FileMode.Directory)
        chooser.setOption(QFileDialog.Option.ShowDirsOnly, True)
        chooser.fileSelected.connect(self.workspace.setText)
        chooser.open()

    def _save(self) -> None:
        entered = {p: f.text().strip() for p, f in self.key_fields.items() if f.text().strip()}
        self.save_button.setEnabled(False)
        self._tasks.spawn(self._save_keys_then_close(entered), name="settings-save")

    async def _save_keys_then_close(self, entered: dict[str, str]) -> None:
        try:
            for provider, key in entered.items():
                status = await asyncio.to_thread(self._keys.set_key, provider, key)
                self.key_status[provider].setText(status.message)
                self.key_fields[provider].clear()
            if entered:
                self.keysChanged.emit()
            self.saved.emit(self.values())
            self.accept()
        finally:
            self.save_button.setEnabled(True)

    def offer_search_models(self, found: Sequence[SearchModel]) -> None:
        """List the embedding models on offer beside the ones listed."""
        for model in found:
            if all(self.search_model.itemData(i) != model
                   for i in range(self.search_model.count())):
                self.search_model.addItem(model.name, model)

    async def _load_statuses(self) -> None:
        keychain, statuses = await asyncio.to_thread(
            lambda: (self._keys.keychain_available,
                     {p: self._keys.status(p) for p in self._providers})
        )
        if not keychain:
            self.intro.setText(NO_KEYCHAIN_INTRO)
        for provider, status in statuses.items():
            field = self.key_fields[provider]
            field.setPlaceholderText(SOURCE_PLACEHOLDERS.get(status.source, "Not set"))
            if status.source == "environment":
                self.key_status[provider].setText(status.message)

    def _test(self, provider: str) -> None:
        self.test_buttons[provider].setEnabled(False)
        self.key_status[provider].setText("Testing…")
        self._tasks.spawn(self._run_test(provider), name=f"settings-test-{provider}")

    async def _run_test(self, provider: str) -> None:
        try:
            key = self.key_fields[provider].text().strip()
            if not key:
                saved = await asyncio.to_thread(self._keys.get_key, provider)
                key = saved or ""
            if not key:
                self.key_status[provider].setText("Enter a key to test it.")
                return
            error = await self._tester(provider, key)
            self.key_status[provider].setText(
                "The key works." if error is None else f"Did not work: {error}"
            )
        except Exception as exc:  # a broken network stack should not take the dialog down
            self.key_status[provider].setText(f"Could not test the key: {exc}")
        finally:
            self.test_buttons[provider].setEnabled(True)

    def status_text(self, provider: str) -> str:
        return self.key_status[provider].text()

    def __repr__(self) -> str:  # never show keys, even by accident
        return "<SettingsDialog>"


async def offer_search_models(dialog: weakref.ref[SettingsDialog],
                              search_models: SearchModels) -> None:
    """List the embedding models on offer once the servers have answered. The dialog is held
    weakly: a server slow to answer must not keep a closed dialog alive, to be freed later on
    whichever thread lets go of this task last (a Qt object freed off its thread crashes)."""
    found = await search_models()
    shown = dialog()
    if shown is not None and shown.isVisible():
        shown.offer_search_models(found)
