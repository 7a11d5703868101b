"""Builds the services once from a data directory: store, engine, model catalog, chat.
Both the window's composition root and the command line start here.

The window is handed `Services`, which holds no store: what it asks of the store goes through
a service bound to it (backups, store health, command replies, preferences, imports,
exports). `OpenServices` adds the store, for the composition root, the command line and
tests."""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..core.clock import SYSTEM_CLOCK, Clock
from ..providers.keys import KeyStore
from ..providers.local.bundled_model import LocalModel
from ..providers.local.server_detection import LocalServers, servers_from_environment
from ..providers.provider import LiteLLMProvider, Provider
from ..providers.tokenizer import CachedTiktokenCounter
from ..store.database import Store, default_store_path
from .attachments import AttachmentService
from .context import ContextEngine
from .mcp.service import McpService
from .models.catalog import ModelCatalog, ModelChoice
from .models.connections import ConnectionService
from .models.model_library import ModelLibrary, ModelLibraryService
from .preferences import (
    SETTINGS_DEFAULT_MODEL,
    SETTINGS_INSTRUCTIONS,
    SETTINGS_SUMMARIZER,
    SETTINGS_WORKSPACE,
    Preferences,
)
from .search import SearchService
from .store_life.backups import BackupService, reload_after_restore
from .store_life.recovery import CommandReplies, open_and_recover
from .store_life.store_state import StoreHealth
from .sync.service import SyncService
from .transfer.export_jobs import ChatExports
from .transfer.import_jobs import ImportJobs
from .turns.chat_service import ChatConfig, ChatService
from .turns.chat_settings import ChatSettingsService
from .turns.sessions import SessionService
from .turns.spending import SpendingService
from .turns.turn_queue import TurnQueue

__all__ = [
    "SETTINGS_DEFAULT_MODEL",
    "SETTINGS_INSTRUCTIONS",
    "SETTINGS_SUMMARIZER",
    "SETTINGS_WORKSPACE",
    "OpenServices",
    "Services",
    "build_services",
]


@dataclass(kw_only=True)
class Services:
    """Every service the window uses, and no store."""

    engine: ContextEngine
    models: ModelCatalog
    chat: ChatService
    keys: KeyStore
    local_servers: LocalServers | None
    backups: BackupService  # made from the store, restored into it
    store_health: StoreHealth  # damage in words, the export of what can be read
    command_replies: CommandReplies  # replies `treechat send` left journaled
    preferences: Preferences  # settings and unsent text kept in the store
    imports: ImportJobs
    exports: ChatExports
    data_folder: Path  # the folder the store lives in (Help shows it, and the log beside it)
    clock: Clock = SYSTEM_CLOCK
    connections: ConnectionService | None = None
    mcp: McpService | None = None
    search: SearchService | None = None  # the session list's ranked search
    sync: SyncService | None = None  # one history across computers

    async def close(self) -> None:
        await self.chat.close()
        if self.mcp is not None:
            await self.mcp.close()


@dataclass(kw_only=True)
class OpenServices(Services):
    """The services with the store they run on: for the composition root (which closes it
    last), the command line and tests."""

    store: Store

    def close_store(self) -> None:
        self.store.close()


def build_services(
    data_dir: Path,
    *,
    bundled: bool = True,
    detect_local_servers: bool = True,
    extra_models: tuple[ModelChoice, ...] = (),
    keys: KeyStore | None = None,
    store: Store | None = None,
    clock: Clock = SYSTEM_CLOCK,
    local_servers: LocalServers | None = None,
    provider: Provider | None = None,
) -> OpenServices:
    """Open the store (recovering crashed drafts), unless it is given open, and wire the
    services on top of it. Every service reads the time from `clock`.

    `detect_local_servers` makes the usual local ports addressable (`ollama/...`); nothing
    is probed until `connections.start_detection()` or a model on them is asked for.
    `local_servers` replaces the probe list (tests pass servers on free ports); `provider`
    replaces litellm (tests pass `tests.support.fake_provider.FakeProvider`)."""
    if store is None:
        store = open_and_recover(default_store_path(data_dir), clock=clock)
    settings: dict[str, Any] = store.call(
        lambda r: {
            k: r.get_setting(k)
            for k in (SETTINGS_DEFAULT_MODEL, SETTINGS_WORKSPACE, SETTINGS_INSTRUCTIONS,
                      SETTINGS_SUMMARIZER)
        }
    )
    keys = keys or KeyStore()
    servers = local_servers or (
        LocalServers(servers_from_environment(), clock=clock) if detect_local_servers else None
    )
    provider = provider or LiteLLMProvider()
    connections = ConnectionService(
        store, keys, detector=servers, provider=provider, bundled=bundled, clock=clock
    )
    models = ModelCatalog(
        keys=keys,
        local_servers=servers,
        bundled=LocalModel() if bundled else None,
        default_model=settings.get(SETTINGS_DEFAULT_MODEL),
        extra=extra_models,
        connections=connections,
        library=ModelLibraryService(ModelLibrary(data_dir / "models", clock=clock)),
    )
    engine = ContextEngine(store, CachedTiktokenCounter())
    workspace = settings.get(SETTINGS_WORKSPACE)
    config = ChatConfig(
        workspace=Path(workspace) if workspace else None,
        global_instructions=settings.get(SETTINGS_INSTRUCTIONS) or "",
        summarizer=str(settings.get(SETTINGS_SUMMARIZER) or ""),
    )
    built_in_protected = engine.config.rules.protected_tools

    def protect(names: frozenset[str]) -> None:
        # The user's protected MCP tools never age, like the built-in protected ones.
        rules = replace(engine.config.rules, protected_tools=built_in_protected | names)
        engine.config = replace(engine.config, rules=rules)

    mcp = McpService(store, keys, on_protected=protect)
    # Files in messages: stored before the request, rendered by the engine from the store.
    attachments = AttachmentService(store, engine.counter, clock=clock)
    engine.files = attachments.payloads
    chat = ChatService(
        store, engine, models, config=config, clock=clock, provider=provider, mcp=mcp,
        sessions=SessionService(store, clock=clock),
        settings=ChatSettingsService(store, clock=clock,
                                     on_global_instructions=config.set_global_instructions),
        spending=SpendingService(store), attachments=attachments, queue=TurnQueue(),
    )
    backups = BackupService(store, clock=clock, reload=functools.partial(
        reload_after_restore, store, engine, chat, mcp, connections))
    return OpenServices(
        store=store, engine=engine, models=models, chat=chat, keys=keys, local_servers=servers,
        backups=backups, store_health=StoreHealth(store, clock),
        command_replies=CommandReplies(store, clock),
        preferences=Preferences(store, engine, chat, models),
        imports=ImportJobs(store, clock, engine.counter), exports=ChatExports(store, clock),
        data_folder=store.path.parent, clock=clock, connections=connections, mcp=mcp,
        search=SearchService(store), sync=SyncService(store, keys, clock=clock),
    )
