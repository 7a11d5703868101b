"""Builds the services once from a data directory: store, engine, model catalog, chat.
Both the window's composition root and the command line start here."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..providers.keys import KeyStore
from ..providers.local.bundled_model import LocalModel
from ..providers.local.server_detection import LocalServers, servers_from_environment
from ..providers.provider import LiteLLMProvider, Provider
from ..providers.tokenizer import CachedTiktokenCounter
from ..store.database import Store, default_store_path
from .chat import ChatConfig, ChatService
from .clock import SYSTEM_CLOCK, Clock
from .connections import ConnectionService
from .context import ContextEngine
from .mcp import McpService
from .model_library import ModelLibrary, ModelLibraryService
from .models import ModelCatalog, ModelChoice
from .recovery import open_and_recover
from .search import SearchService
from .sync.service import SyncService

SETTINGS_DEFAULT_MODEL = "default_model"
SETTINGS_WORKSPACE = "workspace"
SETTINGS_INSTRUCTIONS = "global_instructions"
# Who summarizes folded history: "" offline, "session" the session's model, or a model id.
SETTINGS_SUMMARIZER = "context.summarizer"


@dataclass
class Services:
    store: Store
    engine: ContextEngine
    models: ModelCatalog
    chat: ChatService
    keys: KeyStore
    local_servers: LocalServers | None
    clock: Clock = SYSTEM_CLOCK
    connections: ConnectionService | None = None
    mcp: McpService | None = None
    search: SearchService | None = None  # the session list's ranked search
    sync: SyncService | None = None  # one history across computers

    async def close(self) -> None:
        await self.chat.close()
        if self.mcp is not None:
            await self.mcp.close()

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
) -> Services:
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
    chat = ChatService(
        store, engine, models, config=config, clock=clock, provider=provider, mcp=mcp
    )
    return Services(store, engine, models, chat, keys, servers, clock, connections, mcp=mcp,
                    search=SearchService(store), sync=SyncService(store, keys, clock=clock))
