"""Connections: named endpoints a model can be reached through.

A connection is a hosted provider reached through litellm, an OpenAI-compatible server, an
Ollama, LM Studio or llama.cpp server, or the bundled model. Its models are listed by the
server itself (`/v1/models`; Ollama's `/api/tags` and `/api/show`; LM Studio's
`/api/v0/models`; llama.cpp's `/props`), with the window each one serves (`model_lists`).
A model is addressed as `CONNECTION/MODEL` (`ollama/llama3.2:3b`, `lab/qwen2.5-7b`,
`anthropic/claude-sonnet-4-5`), and `display_name()` is the one name shown for it anywhere.

Nothing here touches the keyring or the store: keys are passed in, records are plain dicts.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal
from urllib.parse import urlsplit, urlunsplit

ConnectionKind = Literal["hosted", "openai-compatible", "ollama", "lmstudio", "llamacpp", "bundled"]
KINDS: tuple[ConnectionKind, ...] = (
    "hosted",
    "openai-compatible",
    "ollama",
    "lmstudio",
    "llamacpp",
    "bundled",
)
KIND_LABELS: Mapping[ConnectionKind, str] = {
    "hosted": "Hosted provider",
    "openai-compatible": "OpenAI-compatible server",
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "llamacpp": "llama.cpp server",
    "bundled": "Bundled model",
}
SERVER_KINDS: frozenset[str] = frozenset({"openai-compatible", "ollama", "lmstudio", "llamacpp"})

BUNDLED_CONNECTION = "local"
BUNDLED_MODEL = "smollm2-135m-instruct"
BUNDLED_LABEL = "SmolLM2 135M"
BUNDLED_CONNECTION_LABEL = "Bundled"
# Models downloaded from the model library, addressed as `library/NAME`
LIBRARY_LABEL = "Downloaded"

# Hosted providers litellm reaches, with the label shown for each.
PROVIDER_LABELS: Mapping[str, str] = {
    "anthropic": "Anthropic",
    "openai": "OpenAI",
    "gemini": "Gemini",
    "mistral": "Mistral",
    "deepseek": "DeepSeek",
    "openrouter": "OpenRouter",
    "groq": "Groq",
    "xai": "xAI",
    "together_ai": "Together AI",
    "fireworks_ai": "Fireworks AI",
}

# The models offered for a hosted provider when the connection names none, most capable first.
HOSTED_MODELS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "anthropic": (
        ("claude-sonnet-4-5", "Claude Sonnet 4.5"),
        ("claude-haiku-4-5", "Claude Haiku 4.5"),
    ),
    "openai": (("gpt-4.1", "GPT-4.1"), ("gpt-4o", "GPT-4o"), ("gpt-4o-mini", "GPT-4o mini")),
    "gemini": (("gemini-2.5-pro", "Gemini 2.5 Pro"), ("gemini-2.5-flash", "Gemini 2.5 Flash")),
    "mistral": (("mistral-large-latest", "Mistral Large"),),
    "deepseek": (("deepseek-chat", "DeepSeek Chat"),),
    "openrouter": (("anthropic/claude-sonnet-4.5", "Claude Sonnet 4.5"),),
}

# litellm prefixes of ids stored before connections existed, and the connection they name.
LEGACY_PREFIXES: Mapping[str, str] = {"ollama_chat": "ollama"}

_ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,39}$")


class ConnectionProblem(ValueError):
    """A connection cannot be used as given, or its server did not answer as expected; the
    message says which, in words a person can act on."""


@dataclass(frozen=True, slots=True)
class ConnectionModel:
    """A model a connection offers. `window` is what the server says it serves (None when
    it does not say); `label` a nicer name where one is known."""

    name: str
    window: int | None = None
    label: str = ""

    def to_record(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name}
        if self.window:
            out["window"] = self.window
        if self.label:
            out["label"] = self.label
        return out

    @staticmethod
    def from_record(record: Mapping[str, Any]) -> ConnectionModel:
        window = record.get("window")
        return ConnectionModel(
            str(record["name"]),
            int(window) if isinstance(window, int) and window > 0 else None,
            str(record.get("label") or ""),
        )


@dataclass(frozen=True, slots=True)
class Connection:
    """A named endpoint. `id` is the first part of a model's address and is what the user
    typed as its name, lower-cased; `label` is how it is shown. The API key is never here:
    `has_key` says one is stored in the keyring under `key_account`."""

    id: str
    kind: ConnectionKind
    label: str = ""
    base_url: str = ""
    provider: str = ""  # hosted: litellm's provider prefix ("openai", "anthropic", ...)
    headers: tuple[tuple[str, str], ...] = ()
    models: tuple[ConnectionModel, ...] = ()
    has_key: bool = False
    timeout: float | None = None  # seconds to connect and to the first byte; None: default
    detected: bool = False  # found by probing this machine's usual ports, not added by hand

    @property
    def display_label(self) -> str:
        return self.label or self.id

    @property
    def key_account(self) -> str:
        """The keyring entry holding this connection's key. A hosted connection named after
        its provider shares the provider's entry, where Settings has always kept it."""
        if self.kind == "hosted" and self.id == self.provider:
            return self.provider
        return f"connection:{self.id}"

    @property
    def api_base(self) -> str | None:
        """What litellm is given as `api_base` (None: the provider's own endpoint)."""
        if not self.base_url:
            return None
        root = self.base_url.rstrip("/")
        if self.kind in ("lmstudio", "llamacpp") and not root.endswith("/v1"):
            return f"{root}/v1"
        return root

    @property
    def server_root(self) -> str:
        """The server's root URL (without an OpenAI-style `/v1`)."""
        root = self.base_url.rstrip("/")
        return root[: -len("/v1")] if root.endswith("/v1") else root

    def litellm_model(self, name: str) -> str:
        """The id litellm routes: the provider's prefix, Ollama's chat API, else OpenAI's."""
        if self.kind == "hosted":
            return f"{self.provider}/{name}"
        if self.kind == "ollama":
            return f"ollama_chat/{name}"
        return f"openai/{name}"

    def address(self, name: str) -> str:
        return f"{self.id}/{name}"

    def model(self, name: str) -> ConnectionModel | None:
        for m in self.models:
            if m.name == name:
                return m
        if self.kind == "ollama" and ":" not in name:
            return self.model(f"{name}:latest")
        return None

    def offered(self) -> tuple[ConnectionModel, ...]:
        """The models to offer: the listed ones, else a hosted provider's usual models."""
        if self.models or self.kind != "hosted":
            return self.models
        usual = HOSTED_MODELS.get(self.provider, ())
        return tuple(ConnectionModel(n, None, label) for n, label in usual)

    def to_record(self) -> dict[str, Any]:
        record: dict[str, Any] = {"id": self.id, "kind": self.kind, "label": self.label}
        if self.base_url:
            record["base_url"] = self.base_url
        if self.provider:
            record["provider"] = self.provider
        if self.headers:
            record["headers"] = [list(h) for h in self.headers]
        if self.models:
            record["models"] = [m.to_record() for m in self.models]
        if self.has_key:
            record["has_key"] = True
        if self.timeout is not None:
            record["timeout"] = self.timeout
        return record

    @staticmethod
    def from_record(record: Mapping[str, Any]) -> Connection:
        kind = str(record.get("kind", ""))
        if kind not in KINDS:
            raise ConnectionProblem(f"unknown connection kind {kind!r}")
        timeout = record.get("timeout")
        return Connection(
            id=str(record["id"]),
            kind=kind,
            label=str(record.get("label") or ""),
            base_url=str(record.get("base_url") or ""),
            provider=str(record.get("provider") or ""),
            headers=tuple((str(k), str(v)) for k, v in record.get("headers") or ()),
            models=tuple(ConnectionModel.from_record(m) for m in record.get("models") or ()),
            has_key=bool(record.get("has_key")),
            timeout=float(timeout) if isinstance(timeout, int | float) else None,
        )


# --- names and input ------------------------------------------------------------------


def connection_id(name: str) -> str:
    """The id for a connection called `name`: lower case, no spaces or slashes."""
    ident = re.sub(r"\s+", "-", name.strip().lower())
    if not _ID.match(ident):
        raise ConnectionProblem(
            f"{name!r} cannot name a connection: use up to 40 letters, digits, '.', '_' or "
            "'-', starting with a letter or digit (it becomes the first part of each model's "
            "address, as in lab/qwen2.5)"
        )
    return ident


def parse_base_url(url: str) -> str:
    """`url` checked and tidied: http or https, a host, no query or fragment, no trailing
    slash. Anything else is refused with a sentence saying why."""
    text = url.strip()
    if any(ch.isspace() or ord(ch) < 32 or ord(ch) == 127 for ch in text):
        # a CR or LF kept here would end up inside a request's header lines
        raise ConnectionProblem(
            f"{url!r} holds a space, a line break or another control character; an address "
            "is one line with none"
        )
    parts = urlsplit(text)
    if parts.scheme.lower() not in ("http", "https"):
        raise ConnectionProblem(
            f"{url!r} is not an http:// or https:// address (for example http://127.0.0.1:8000/v1)"
        )
    if not parts.hostname:
        raise ConnectionProblem(f"{url!r} has no host name")
    if parts.query or parts.fragment:
        raise ConnectionProblem(f"{url!r} must not carry a query or a fragment")
    if parts.username or parts.password:
        # The store is not where secrets go: a key belongs in the keychain.
        raise ConnectionProblem(
            "the address must not carry a user name or password; give the key with "
            "--key-from-env (it is kept in the system keychain)"
        )
    try:
        parts.port  # noqa: B018 - raises on a port that is not a number
    except ValueError as exc:
        raise ConnectionProblem(f"{url!r} has an invalid port") from exc
    path = parts.path.rstrip("/")
    return urlunsplit((parts.scheme.lower(), parts.netloc, path, "", ""))


def is_loopback(url: str) -> bool:
    """Whether `url` points at this machine (127.0.0.0/8, ::1 or localhost)."""
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def default_openai_base(url: str) -> str:
    """An OpenAI-compatible server's API root: a bare `http://host:port` gets `/v1`, as
    LM Studio, llama.cpp, vLLM and Ollama all serve it there."""
    parts = urlsplit(url)
    return url if parts.path not in ("", "/") else url.rstrip("/") + "/v1"


def split_address(address: str) -> tuple[str, str]:
    """`CONNECTION/MODEL` -> (`CONNECTION`, `MODEL`); the model part may hold more slashes."""
    head, sep, rest = address.partition("/")
    if not sep or not head or not rest:
        raise ConnectionProblem(
            f"{address!r} is not CONNECTION/MODEL (for example ollama/llama3.2:3b); "
            "see `treechat models`"
        )
    return LEGACY_PREFIXES.get(head, head), rest


def display_name(address: str, labels: Mapping[str, str] | None = None) -> str:
    """The one name shown for a model, anywhere: "Connection · model".

    `address` is a picker address (`ollama/llama3.2:3b`), a hosted litellm id
    (`anthropic/claude-sonnet-4-5`), a legacy stored id (`ollama_chat/...`, the bundled
    model's `openai/smollm2-135m-instruct`) or a name from another app (`gpt-4`, shown as
    is). `labels` maps connection ids to the labels the user gave them.
    """
    text = address.strip()
    if not text:
        return "Assistant"
    head, sep, name = text.partition("/")
    if not sep:
        return text
    head = LEGACY_PREFIXES.get(head, head)
    if name == BUNDLED_MODEL and head in (BUNDLED_CONNECTION, "openai"):
        return f"{BUNDLED_CONNECTION_LABEL} · {BUNDLED_LABEL}"
    given = (labels or {}).get(head)
    connection = given or PROVIDER_LABELS.get(head) or _LOCAL_LABELS.get(head) or head
    pretty = dict(HOSTED_MODELS.get(head, ())).get(name, name)
    return f"{connection} · {pretty}"


_LOCAL_LABELS: Mapping[str, str] = {
    "ollama": "Ollama",
    "lmstudio": "LM Studio",
    "llamacpp": "llama.cpp",
    "library": LIBRARY_LABEL,
}



def with_models(connection: Connection, models: Sequence[ConnectionModel]) -> Connection:
    return replace(connection, models=tuple(models))


def parse_headers(lines: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """Extra request headers as typed by a person (`Name: value`), checked."""
    out: list[tuple[str, str]] = []
    for line in lines:
        name, sep, value = line.partition(":")
        name = name.strip()
        if not sep or not name or not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+", name):
            raise ConnectionProblem(f"{line!r} is not a header (write it as Name: value)")
        if name.lower() == "authorization":
            raise ConnectionProblem(
                "give the key with --key-from-env (it is kept in the keyring), not as a header"
            )
        value = value.strip()
        if any((ord(c) < 32 and c != "\t") or ord(c) == 127 for c in value):
            # a CR or LF would end the header line and start another of the value's making
            raise ConnectionProblem(
                f"the value of the header {name} holds a line break or another control "
                "character; give it on one line")
        out.append((name, value))
    return tuple(out)
