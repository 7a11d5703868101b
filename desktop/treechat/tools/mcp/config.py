"""What an MCP server is to Treechat: how to reach it (stdio command or URL), its secrets, the
default answer to its tool calls, and reading the `{"mcpServers": {...}}` JSON that Claude
Desktop, Cursor and VS Code write."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

from ..files import shown_name

Transport = Literal["stdio", "http", "sse"]
Policy = Literal["ask", "allow", "deny"]
TRANSPORTS: tuple[Transport, ...] = ("stdio", "http", "sse")
POLICIES: tuple[Policy, ...] = ("ask", "allow", "deny")

DEFAULT_CALL_TIMEOUT = 120.0
DEFAULT_START_TIMEOUT = 60.0  # `npx` may download the server on its first start
MAX_NAME = 32
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")
# How the JSON files name a transport, as the clients that write them spell it.
_TRANSPORT_ALIASES: Mapping[str, Transport] = {
    "stdio": "stdio",
    "http": "http",
    "streamable-http": "http",
    "streamable_http": "http",
    "streamablehttp": "http",
    "sse": "sse",
}


class ConfigError(ValueError):
    """A server configuration that cannot work, with a message written for the user."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """One MCP server. `env` and `headers` hold values; only their names are stored in the
    settings table, the values live in the keyring (they are often tokens)."""

    name: str
    transport: Transport
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict)
    policy: Policy = "ask"
    enabled: bool = True
    call_timeout: float = DEFAULT_CALL_TIMEOUT
    start_timeout: float = DEFAULT_START_TIMEOUT

    def __post_init__(self) -> None:
        check_name(self.name)
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"{self.name}: unknown transport {self.transport!r}")
        if self.policy not in POLICIES:
            raise ConfigError(
                f"{self.name}: the default must be one of {', '.join(POLICIES)}, "
                f"not {self.policy!r}"
            )
        if self.transport == "stdio" and not self.command.strip():
            raise ConfigError(f"{self.name}: a stdio server needs a command to run")
        if self.transport != "stdio" and not re.match(r"^https?://[^/\s]+", self.url):
            raise ConfigError(
                f"{self.name}: the URL must start with http:// or https:// (got {self.url!r})"
            )
        if self.call_timeout <= 0 or self.start_timeout <= 0:
            raise ConfigError(f"{self.name}: timeouts must be positive")

    @property
    def where(self) -> str:
        """The command line or URL, for lists and messages."""
        if self.transport == "stdio":
            return " ".join([self.command, *self.args])
        return self.url

    def public(self) -> dict[str, Any]:
        """The settings-table form: everything but the values of env and headers."""
        return {
            "name": self.name,
            "transport": self.transport,
            "command": self.command,
            "args": list(self.args),
            "env_names": sorted(self.env),
            "cwd": self.cwd,
            "url": self.url,
            "header_names": sorted(self.headers),
            "policy": self.policy,
            "enabled": self.enabled,
            "call_timeout": self.call_timeout,
            "start_timeout": self.start_timeout,
        }

    def secrets(self) -> dict[str, dict[str, str]]:
        """The keyring form: the values `public` leaves out."""
        return {
            "env": dict(sorted(self.env.items())),
            "headers": dict(sorted(self.headers.items())),
        }

    @classmethod
    def from_stored(
        cls, public: Mapping[str, Any], secrets: Mapping[str, Any] | None = None
    ) -> ServerConfig:
        """Rebuild from `public()` and `secrets()`; a name whose value is missing from the
        keyring keeps an empty value rather than vanishing, so the user sees what to re-enter."""
        secrets = secrets or {}
        env_values = _str_map(secrets.get("env") or {}, "env")
        header_values = _str_map(secrets.get("headers") or {}, "headers")
        env = {k: env_values.get(k, "") for k in public.get("env_names") or ()}
        headers = {k: header_values.get(k, "") for k in public.get("header_names") or ()}
        return cls(
            name=str(public["name"]),
            transport=cast(Transport, public.get("transport", "stdio")),
            command=str(public.get("command") or ""),
            args=tuple(str(a) for a in public.get("args") or ()),
            env=env,
            cwd=str(public.get("cwd") or ""),
            url=str(public.get("url") or ""),
            headers=headers,
            policy=cast(Policy, public.get("policy", "ask")),
            enabled=bool(public.get("enabled", True)),
            call_timeout=float(public.get("call_timeout") or DEFAULT_CALL_TIMEOUT),
            start_timeout=float(public.get("start_timeout") or DEFAULT_START_TIMEOUT),
        )

    def with_changes(self, **changes: Any) -> ServerConfig:
        return replace(self, **changes)


def check_name(name: str) -> None:
    if not name or len(name) > MAX_NAME or not _NAME.match(name):
        raise ConfigError(
            f"server name {name!r}: use up to {MAX_NAME} letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    if "__" in name:
        raise ConfigError(f"server name {name!r}: '__' separates server and tool names")


def safe_name(raw: str) -> str:
    """A server name from an imported file's key ("GitHub Tools" -> "GitHub-Tools")."""
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", raw.strip()).strip("-_")
    cleaned = re.sub(r"_{2,}", "_", cleaned)[:MAX_NAME].strip("-_")
    return cleaned or "server"


def _str_map(value: Any, what: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{what} must be an object of names to text")
    out: dict[str, str] = {}
    for k, v in value.items():
        if not isinstance(v, str | int | float | bool) or isinstance(v, bool):
            raise ConfigError(f"{what}: the value of {k!r} must be text")
        out[str(k)] = str(v)
    return out


def parse_header(text: str) -> tuple[str, str]:
    """`K=V` or `K: V` from the command line."""
    for sep in ("=", ":"):
        key, found, value = text.partition(sep)
        if found and key.strip():
            return key.strip(), value.strip()
    raise ConfigError(f"a header is NAME=VALUE, not {text!r}")


@dataclass(frozen=True, slots=True)
class ImportResult:
    servers: tuple[ServerConfig, ...]
    problems: tuple[str, ...]  # entries that were skipped, and why


def parse_servers_json(text: str) -> ImportResult:
    """Read a Claude Desktop / Cursor (`mcpServers`) or VS Code (`servers`) configuration.

    A broken file raises ConfigError; a broken entry is skipped and named in `problems`,
    so one bad server does not lose the others.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from exc
    except RecursionError:
        raise ConfigError("this JSON is nested too deeply to be a server configuration") from None
    if not isinstance(data, Mapping):
        raise ConfigError('expected an object like {"mcpServers": {...}}')
    table = data.get("mcpServers", data.get("servers"))
    if table is None and data and all(isinstance(v, Mapping) for v in data.values()) and any(
        isinstance(v, Mapping) and ("command" in v or "url" in v) for v in data.values()
    ):
        table = data  # the inside of "mcpServers", pasted on its own
    if not isinstance(table, Mapping):
        raise ConfigError('no "mcpServers" object in this JSON')
    servers: list[ServerConfig] = []
    problems: list[str] = []
    taken: set[str] = set()
    for raw_name, entry in table.items():
        name = safe_name(str(raw_name))
        base, n = name, 2
        while name.lower() in taken:
            name = f"{base[: MAX_NAME - 3]}-{n}"
            n += 1
        try:
            server = _entry(name, entry)
        except ConfigError as exc:
            problems.append(f"{shown_name(str(raw_name))}: {exc}")  # one line, whatever the key
            continue
        taken.add(name.lower())
        servers.append(server)
    return ImportResult(tuple(servers), tuple(problems))


def _entry(name: str, entry: Any) -> ServerConfig:
    if not isinstance(entry, Mapping):
        raise ConfigError("each server must be an object")
    kind = str(entry.get("type") or entry.get("transport") or "").strip().lower()
    url = entry.get("url") or entry.get("serverUrl")
    if kind and kind not in _TRANSPORT_ALIASES:
        raise ConfigError(f"unknown transport {kind!r}")
    transport: Transport
    if kind:
        transport = _TRANSPORT_ALIASES[kind]
    elif url:
        # Older clients wrote SSE servers' URLs without a type; they end in /sse by convention.
        transport = "sse" if str(url).rstrip("/").endswith("/sse") else "http"
    else:
        transport = "stdio"
    args = entry.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise ConfigError("args must be a list of text")
    try:
        return ServerConfig(
            name=name,
            transport=transport,
            command=str(entry.get("command") or ""),
            args=tuple(str(a) for a in args),
            env=_str_map(entry.get("env") or {}, "env"),
            cwd=str(entry.get("cwd") or ""),
            url=str(url or ""),
            headers=_str_map(entry.get("headers") or {}, "headers"),
            enabled=not bool(entry.get("disabled", False)),
        )
    except ConfigError as exc:
        # The entry's own name is already in the message prefix of the caller.
        message = str(exc)
        raise ConfigError(message.removeprefix(f"{name}: ")) from None
