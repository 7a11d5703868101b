"""MCP servers as the user configures them, and their tools, prompts and resources as chats use
them: configurations in the settings table with their secrets in the keyring, enabled
globally and per chat, started on demand, every tool call approved first.

The window plugs in through three seams: `set_approver` (the approval prompt), `subscribe`
(server states for Settings → Tools) and the async methods below; the command line uses the
same ones (`treechat mcp`, and a terminal approver for `treechat send`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ...core.rules import DEFAULT_PROTECTED_TOOLS
from ...providers.keys import KeyStore
from ...store.database import Store
from ...tools.mcp.config import (
    ConfigError,
    ImportResult,
    Policy,
    ServerConfig,
    parse_servers_json,
)
from ...tools.mcp.naming import assign_names
from ...tools.mcp.runtime import (
    McpCallError,
    McpRuntime,
    ResourceInfo,
    ServerState,
    ToolInfo,
)
from ..store_life.drafts import StoreRelease
from ..store_life.store_release import store_let_go
from .approval import ApprovalRequest, Approver, Decision, RejectedTool
from .prompts_and_resources import PromptCommand, ResourceText
from .stored import (
    KEYRING_PREFIX,
    SETTINGS_LISTINGS,
    SETTINGS_PROTECTED,
    SETTINGS_SERVERS,
    ChatSwitches,
    chat_key,
    read_secrets,
    tool_from_stored,
    tool_to_stored,
)
from .tool import McpTool

log = logging.getLogger(__name__)

class McpService:
    """Owns the MCP configuration and the runtime. All methods are awaited on the app's loop;
    servers run on the runtime's own thread."""

    def __init__(
        self,
        store: Store,
        keys: KeyStore,
        runtime: McpRuntime | None = None,
        *,
        approver: Approver | None = None,
        on_protected: Callable[[frozenset[str]], None] | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        self.runtime = runtime or McpRuntime()
        self._approver = approver
        self._on_protected = on_protected
        self._configs: dict[str, ServerConfig] = {}
        self._listings: dict[str, tuple[ToolInfo, ...]] = {}
        self._protected: set[str] = set()
        self._chats: dict[str, ChatSwitches] = {}
        self._loaded = False
        self._subscribers: list[Callable[[ServerState], None]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        # Set by `treechat send`: a call to a server over HTTP is awaited with the store let
        # go of, like the reply's wait (a stdio server is a process of ours, not the network).
        self.release_store: StoreRelease | None = None
        # Before a turn, start the servers whose tools are already known too: the window's
        # connections last, and its resource menu reads a running server. `treechat send`
        # turns it off: the chat offers the remembered tools and a server starts when one
        # of them is called, so a reply that calls none never loads the MCP SDK (about
        # 25 MB) nor spawns a server.
        self.start_listed_servers = True
        self.runtime.add_listener(self._from_runtime)

    # --- loading ---------------------------------------------------------------------

    def load(self) -> None:
        """Read the configuration (settings table, then keyring). Blocking: call it off the
        GUI thread, or use `ensure_loaded`."""
        stored: dict[str, Any] = self.store.call(
            lambda r: {
                k: r.get_setting(k) for k in (SETTINGS_SERVERS, SETTINGS_LISTINGS,
                                               SETTINGS_PROTECTED)
            }
        )
        configs: dict[str, ServerConfig] = {}
        for name, public in sorted((stored.get(SETTINGS_SERVERS) or {}).items()):
            try:
                secrets = read_secrets(self.keys, name, public)
                configs[name] = ServerConfig.from_stored(public, secrets)
            except (ConfigError, KeyError, TypeError, ValueError) as exc:
                log.warning("skipping the stored MCP server %s: %s", name, exc)
        self._configs = configs
        self._listings = {
            name: tuple(tool_from_stored(t) for t in tools)
            for name, tools in (stored.get(SETTINGS_LISTINGS) or {}).items()
            if name in configs
        }
        self._protected = set(stored.get(SETTINGS_PROTECTED) or ())
        self._loaded = True
        self._protected_changed()

    async def ensure_loaded(self) -> None:
        if not self._loaded:
            await asyncio.to_thread(self.load)

    # --- configuration ---------------------------------------------------------------

    def configs(self) -> list[ServerConfig]:
        """Every configured server, by name."""
        return [self._configs[n] for n in sorted(self._configs)]

    def config(self, name: str) -> ServerConfig:
        config = self._configs.get(name)
        if config is None:
            known = ", ".join(sorted(self._configs)) or "none"
            raise LookupError(f"no MCP server named {name!r} (configured: {known})")
        return config

    async def add(self, config: ServerConfig, *, replace_existing: bool = False) -> ServerConfig:
        """Save a server; its env and header values go to the keyring only."""
        await self.ensure_loaded()
        clash = next((n for n in self._configs if n.lower() == config.name.lower()), None)
        if clash is not None and not replace_existing:
            raise ConfigError(f"a server named {clash!r} already exists")
        if clash is not None and clash != config.name:
            await self.remove(clash)
        secrets = config.secrets()
        if secrets["env"] or secrets["headers"]:
            await asyncio.to_thread(
                self.keys.set_key, KEYRING_PREFIX + config.name, json.dumps(secrets)
            )
        elif clash is not None:
            await asyncio.to_thread(self.keys.delete_key, KEYRING_PREFIX + config.name)
        old = self._configs.get(config.name)
        self._configs[config.name] = config
        await self._save_servers()
        if old is not None and _reach(old) != _reach(config) \
                and self._listings.pop(config.name, None) is not None:
            await self._save_listings()  # another server, perhaps: listed afresh before use
        if old is not None and old != config and self.state(config.name).status != "stopped":
            await self.runtime.stop(config.name)
        return config

    async def remove(self, name: str) -> None:
        await self.ensure_loaded()
        self.config(name)
        await self.runtime.stop(name)
        del self._configs[name]
        self._listings.pop(name, None)
        self._protected = {p for p in self._protected if not p.startswith(f"{name}/")}
        await asyncio.to_thread(self.keys.delete_key, KEYRING_PREFIX + name)
        await self._save_servers()
        await self._save_listings()
        await self._save_protected()

    async def set_policy(self, name: str, policy: Policy) -> ServerConfig:
        return await self.add(self.config(name).with_changes(policy=policy), replace_existing=True)

    async def set_enabled(self, name: str, enabled: bool) -> ServerConfig:
        """Enable or disable a server for every chat that does not say otherwise."""
        return await self.add(
            self.config(name).with_changes(enabled=enabled), replace_existing=True
        )

    async def import_json(self, text: str) -> ImportResult:
        """Add the servers of a pasted `{"mcpServers": {...}}`; entries that cannot work, and
        names already taken, are skipped and reported."""
        await self.ensure_loaded()
        parsed = parse_servers_json(text)
        added: list[ServerConfig] = []
        problems = list(parsed.problems)
        for config in parsed.servers:
            try:
                added.append(await self.add(config))
            except ConfigError as exc:
                problems.append(f"{config.name}: {exc}")
        return ImportResult(tuple(added), tuple(problems))

    async def import_file(self, path: Path) -> ImportResult:
        try:
            text = await asyncio.to_thread(Path(path).read_text, encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigError(f"could not read {path}: {exc}") from exc
        return await self.import_json(text)

    async def _save_servers(self) -> None:
        data = {n: c.public() for n, c in sorted(self._configs.items())}
        await self.store.run(lambda r: r.set_setting(SETTINGS_SERVERS, data))

    async def _save_listings(self) -> None:
        data = {n: [tool_to_stored(t) for t in tools] for n, tools in self._listings.items()}
        await self.store.run(lambda r: r.set_setting(SETTINGS_LISTINGS, data))

    async def _save_protected(self) -> None:
        data = sorted(self._protected)
        await self.store.run(lambda r: r.set_setting(SETTINGS_PROTECTED, data))
        self._protected_changed()

    # --- per chat --------------------------------------------------------------------

    async def load_chat(self, session_id: str) -> None:
        await self.ensure_loaded()
        if session_id in self._chats:
            return
        raw = await self.store.run(lambda r: r.get_setting(chat_key(session_id)))
        chat = ChatSwitches()
        if isinstance(raw, dict):
            chat.servers = {str(k): bool(v) for k, v in (raw.get("servers") or {}).items()}
            chat.always = {str(a) for a in raw.get("always") or ()}
        self._chats[session_id] = chat

    async def _save_chat(self, session_id: str) -> None:
        data = self._chats[session_id].stored()
        await self.store.run(lambda r: r.set_setting(chat_key(session_id), data))

    async def set_enabled_in_chat(self, session_id: str, name: str, enabled: bool | None) -> None:
        """Turn a server on or off in one chat; None follows the global setting again."""
        self.config(name)
        await self.load_chat(session_id)
        chat = self._chats[session_id]
        if enabled is None:
            chat.servers.pop(name, None)
        else:
            chat.servers[name] = enabled
        await self._save_chat(session_id)

    def enabled_in(self, session_id: str) -> list[ServerConfig]:
        """The servers a chat uses (its overrides, else the global switch), by name."""
        chat = self._chats.get(session_id, ChatSwitches())
        return [c for c in self.configs() if chat.servers.get(c.name, c.enabled)]

    async def always_allowed(self, session_id: str) -> list[tuple[str, str]]:
        await self.load_chat(session_id)
        return [
            (s, t) for s, _, t in (a.partition("/") for a in sorted(self._chats[session_id].always))
        ]

    async def forget_always(self, session_id: str, server: str, tool: str) -> None:
        await self.load_chat(session_id)
        self._chats[session_id].always.discard(f"{server}/{tool}")
        await self._save_chat(session_id)

    # --- life cycle ------------------------------------------------------------------

    def subscribe(self, listener: Callable[[ServerState], None]) -> Callable[[], None]:
        """Call `listener` on this loop whenever a server's state changes; returns the
        function that unsubscribes."""
        self._loop = self._loop or _running_loop()
        self._subscribers.append(listener)
        return lambda: self._subscribers.remove(listener)

    def _from_runtime(self, state: ServerState) -> None:
        # Runs on the MCP thread: hop to the subscribers' loop.
        loop = self._loop
        if loop is None or loop.is_closed() or not self._subscribers:
            return
        for listener in list(self._subscribers):
            loop.call_soon_threadsafe(listener, state)

    def state(self, name: str) -> ServerState:
        return self.runtime.state(name)

    def states(self) -> dict[str, ServerState]:
        return {c.name: self.runtime.state(c.name) for c in self.configs()}

    async def prepare(self, session_id: str) -> dict[str, ServerState]:
        """Before a turn: start the chat's servers that are not running yet (all at once),
        and remember what they list, so the tool list is known before the first request.
        Without `start_listed_servers`, only those never listed are started."""
        return await self._start_chat_servers(session_id, listed=self.start_listed_servers)

    async def _start_chat_servers(
        self, session_id: str, *, listed: bool = True
    ) -> dict[str, ServerState]:
        await self.load_chat(session_id)
        wanted = [
            c for c in self.enabled_in(session_id)
            if self.state(c.name).status == "stopped" and (listed or c.name not in self._listings)
        ]
        if wanted:
            async with self._let_go(session_id, "the tool servers to start"):
                states = await asyncio.gather(*(self._launch(c) for c in wanted))
            for config, state in zip(wanted, states, strict=True):
                await self._remember_listing(config, state)
        return {c.name: self.state(c.name) for c in self.enabled_in(session_id)}

    async def _start(self, config: ServerConfig, *, restart: bool = False,
                     session_id: str | None = None) -> ServerState:
        async with self._let_go(session_id, f"the {config.name} server to start"):
            state = await self._launch(config, restart=restart)
        await self._remember_listing(config, state)
        return state

    async def _launch(self, config: ServerConfig, *, restart: bool = False) -> ServerState:
        """Start the server and list what it offers: a wait on a peer, no store work."""
        if restart:
            return await self.runtime.restart(config)
        return await self.runtime.start(config)

    async def _remember_listing(self, config: ServerConfig, state: ServerState) -> None:
        if state.status == "ready" and self._listings.get(config.name) != state.tools:
            self._listings[config.name] = state.tools
            await self._save_listings()

    @contextlib.asynccontextmanager
    async def _let_go(self, session_id: str | None, what: str) -> AsyncIterator[None]:
        """With `release_store` (a command-line turn), the store is let go of across a wait
        on a server or a person, so another command or the window can use it meanwhile."""
        release = self.release_store
        if release is None or session_id is None:
            yield
            return
        async with store_let_go(self.store, release, session_id=session_id, what=what):
            yield

    async def start(self, name: str) -> ServerState:
        await self.ensure_loaded()
        return await self._start(self.config(name))

    async def restart(self, name: str) -> ServerState:
        """Stop (if running) and start again: the Settings page's Restart button."""
        await self.ensure_loaded()
        return await self._start(self.config(name), restart=True)

    async def stop(self, name: str) -> None:
        await self.runtime.stop(name)

    async def close(self) -> None:
        await self.runtime.aclose()

    # --- tools -----------------------------------------------------------------------

    def tools_for(self, session_id: str, taken: Iterable[str] = ()) -> list[McpTool]:
        """The chat's MCP tools, declared from the servers' last listing so that the tool
        list is the same on every request whether a server is up yet or not (CTX-006).
        Names are `server__tool`, unique against each other and `taken` (built-ins)."""
        offered: dict[tuple[str, str], tuple[str, ToolInfo]] = {}
        for config in self.enabled_in(session_id):
            for info in self._tools_of(config.name):
                if info.problem is None:
                    offered[(config.name, info.name)] = (config.name, info)
        names = assign_names(offered, taken)
        return [
            McpTool(self, session_id, server, info, names[key])
            for key, (server, info) in sorted(offered.items(), key=lambda kv: names[kv[0]])
        ]

    def _tools_of(self, name: str) -> tuple[ToolInfo, ...]:
        state = self.runtime.state(name)
        if state.status == "ready":
            return state.tools
        return self._listings.get(name, ())

    def rejected_tools(self) -> list[RejectedTool]:
        """Tools left out because a provider would refuse their schema (Settings shows them)."""
        return [
            RejectedTool(name, t.name, t.problem)
            for name in sorted(self._configs)
            for t in self._tools_of(name)
            if t.problem is not None
        ]

    def set_approver(self, approver: Approver | None) -> None:
        """Who answers "may this tool run?": the window's prompt, or the terminal."""
        self._approver = approver

    async def authorize(self, request: ApprovalRequest) -> Decision | None:
        """Allowed (the decision) or denied (None). Nothing runs while the approver is
        asked; cancelling the turn cancels the question. Before a person is asked, the
        server is started if it is not up, and a tool it no longer lists is McpCallError."""
        config = self._configs.get(request.server)
        if config is None or config.policy == "deny":
            return None
        await self.load_chat(request.session_id)
        chat = self._chats[request.session_id]
        key = f"{request.server}/{request.tool}"
        if key in chat.always or config.policy == "allow":
            return Decision.ALLOW_ONCE
        approver = self._approver
        if approver is None:
            log.info("no one to ask about %s; denied", key)
            return None
        # A person is asked only about a call that can run: the server up, the tool still
        # offered (the chat may have declared it from an older listing).
        await self._offering(request.server, request.tool, request.session_id)
        async with self._let_go(request.session_id, f"an answer about {key}"):
            decision = await approver(request)
        if decision is Decision.DENY:
            return None
        if decision is Decision.ALLOW_ALWAYS:
            chat.always.add(key)
            await self._save_chat(request.session_id)
        return decision

    async def call(
        self, server: str, tool: str, args: Mapping[str, Any], *, session_id: str | None = None
    ) -> Any:
        """Call a tool, starting its server first when it is not up (not started yet, or a
        crash earlier). With `release_store` and the chat's `session_id`, the store is let
        go of while it starts and during a call over HTTP (`store_release.store_let_go`)."""
        config = self.config(server)
        await self._offering(server, tool, session_id)
        release = self.release_store
        if release is None or session_id is None or config.transport == "stdio":
            return await self.runtime.call_tool(server, tool, args)
        async with store_let_go(self.store, release, session_id=session_id,
                                what=f"the answer of {server} › {tool}", wait_on_stop=True):
            return await self.runtime.call_tool(server, tool, args)

    async def _offering(self, server: str, tool: str, session_id: str | None) -> None:
        """The server up (started, and its listing remembered, when it is not) and `tool`
        among what it lists now; else McpCallError says why, for the model and the user."""
        state = self.state(server)
        if state.status != "ready":
            state = await self._start(self.config(server), restart=state.status == "failed",
                                      session_id=session_id)
            if state.status != "ready":
                tail = "\n".join(state.stderr_tail.splitlines()[-8:])
                raise McpCallError(
                    f"the {server} server could not start: {state.error}"
                    + (f"; its last output:\n{tail}" if tail else "")
                )
        if any(t.name == tool for t in state.tools):
            return
        offered = ", ".join(t.name for t in state.tools if t.problem is None) or "none"
        raise McpCallError(
            f"the {server} server no longer has a tool named {tool!r}, so nothing ran; the "
            f"tools it lists now are: {offered}. The chat's tool list is updated for the "
            "next message."
        )

    # --- protected tools -------------------------------------------------------------

    def protected(self) -> list[tuple[str, str]]:
        return [(s, t) for s, _, t in (p.partition("/") for p in sorted(self._protected))]

    async def set_protected(self, server: str, tool: str, protected: bool) -> None:
        """Keep this tool's calls and results whole however old they get."""
        await self.ensure_loaded()
        self.config(server)
        key = f"{server}/{tool}"
        if protected:
            self._protected.add(key)
        else:
            self._protected.discard(key)
        await self._save_protected()

    def protected_tool_names(self) -> frozenset[str]:
        """The public names of the protected MCP tools, as tool nodes carry them."""
        pairs = {
            (c.name, t.name)
            for c in self.configs()
            for t in self._tools_of(c.name)
            if t.problem is None
        }
        names = assign_names(pairs, DEFAULT_PROTECTED_TOOLS)
        wanted = {tuple(p.split("/", 1)) for p in self._protected}
        return frozenset(n for pair, n in names.items() if pair in wanted)

    def _protected_changed(self) -> None:
        if self._on_protected is not None:
            self._on_protected(self.protected_tool_names())

    # --- prompts and resources -------------------------------------------------------

    async def prompt_commands(self, session_id: str) -> list[PromptCommand]:
        """The chat's MCP prompts as `/server:prompt` commands (servers are started)."""
        await self._start_chat_servers(session_id)
        return [
            PromptCommand(f"/{c.name}:{p.name}", c.name, p)
            for c in self.enabled_in(session_id)
            for p in self.state(c.name).prompts
        ]

    async def expand_prompt(
        self, session_id: str, command: str, arguments: Mapping[str, str] | None = None
    ) -> str:
        """The text a `/server:prompt` command puts in the composer."""
        server, _, prompt = command.lstrip("/").partition(":")
        if server not in {c.name for c in self.enabled_in(session_id)}:
            raise LookupError(f"no MCP server {server!r} is enabled in this chat")
        await self._start_chat_servers(session_id)
        info = next((p for p in self.state(server).prompts if p.name == prompt), None)
        if info is None:
            raise LookupError(f"the {server} server has no prompt {prompt!r}")
        args = dict(arguments or {})
        missing = [a.name for a in info.arguments if a.required and not args.get(a.name)]
        if missing:
            raise ConfigError(f"/{server}:{prompt} needs {', '.join(missing)}")
        messages = await self.runtime.get_prompt(server, prompt, args)
        return "\n\n".join(m.text for m in messages if m.text)

    async def resources(self, session_id: str) -> list[tuple[str, ResourceInfo]]:
        await self._start_chat_servers(session_id)
        return [
            (c.name, r) for c in self.enabled_in(session_id) for r in self.state(c.name).resources
        ]

    async def read_resource(self, server: str, uri: str) -> ResourceText:
        """A resource's text, to attach to a message."""
        state = self.state(server)
        if state.status != "ready":
            state = await self.start(server)
        info = next((r for r in state.resources if r.uri == uri), None)
        text = await self.runtime.read_resource(server, uri)
        label = f"{server}: {info.name if info else uri}"
        return ResourceText(server, uri, label, text)


def _reach(config: ServerConfig) -> tuple[object, ...]:
    """What decides which server answers, and as whom: a change to it may change the tools."""
    return (config.transport, config.command, config.args, dict(config.env), config.cwd,
            config.url, dict(config.headers))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def protected_with(names: frozenset[str], base: Sequence[str] = ()) -> frozenset[str]:
    """The rules' protected set: the built-in defaults, `base`, and these MCP tools."""
    return frozenset(DEFAULT_PROTECTED_TOOLS | set(base) | names)

