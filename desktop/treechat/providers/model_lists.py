"""The models a connection's server offers, read from its own list: OpenAI's `/v1/models`,
llama.cpp's props, LM Studio's and Ollama's native APIs (with each model's window where the
server says it), read within bounds and turned into a `ConnectionProblem` in words when the
server cannot be reached or answers nonsense."""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from ..core.bounded_read import ReadLimitError
from .bounded_http import fetch
from .connections import SERVER_KINDS, Connection, ConnectionModel, ConnectionProblem

MAX_MODELS = 20_000
"""Entries kept from one model list; a server that lists more is cut (and the log says so)."""

SHOW_LIMIT = 64
"""Ollama models whose window is asked of `/api/show`; the rest get the fallback window."""

SHOW_CONCURRENCY = 8
LIST_TIMEOUT = httpx.Timeout(10.0, connect=3.0)

log = logging.getLogger(__name__)


def request_headers(connection: Connection, api_key: str | None) -> dict[str, str]:
    """Headers for a request to the connection's server: its extra headers, and a Bearer
    token only when there is a key (an empty key sends no Authorization at all)."""
    headers = dict(connection.headers)
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers


def _problem_from(exc: Exception, where: str) -> ConnectionProblem:
    if isinstance(exc, httpx.ConnectError):
        return ConnectionProblem(f"nothing is listening on {where.split('/', 1)[0]}")
    if isinstance(exc, httpx.TimeoutException):
        return ConnectionProblem(f"{where} did not answer in time")
    if isinstance(exc, httpx.HTTPStatusError):
        return ConnectionProblem(
            f"{where} answered HTTP {exc.response.status_code}: {_own_words(exc.response)}"
        )
    return ConnectionProblem(f"{where} could not be read ({type(exc).__name__}: {exc})")


def _own_words(response: httpx.Response) -> str:
    """The server's own error message, shortened."""
    try:
        body = response.json()
    except ValueError:
        text = response.text.strip()
        return (text[:200] + "…") if len(text) > 200 else (text or response.reason_phrase)
    if isinstance(body, Mapping):
        error = body.get("error")
        if isinstance(error, Mapping) and error.get("message"):
            return str(error["message"])[:300]
        if isinstance(error, str):
            return error[:300]
        if body.get("message"):
            return str(body["message"])[:300]
    return json.dumps(body)[:200]


def _where(url: str) -> str:
    return url.split("://", 1)[-1].rstrip("/")


async def _get_json(
    client: httpx.AsyncClient, url: str, headers: Mapping[str, str], *, method: str = "GET",
    body: Any = None,
) -> Any:
    try:
        response = await fetch(client, method, url, what=_where(url), headers=headers, json=body)
        response.raise_for_status()
    except httpx.HTTPError as exc:
        raise _problem_from(exc, _where(url)) from None
    except ReadLimitError as exc:
        raise ConnectionProblem(str(exc)) from None
    try:
        return response.json()
    except RecursionError:
        raise ConnectionProblem(
            f"{_where(url)} answered with JSON nested too deep to read"
        ) from None
    except ValueError:
        kind = response.headers.get("content-type", "").split(";")[0] or "no content type"
        looks = "a web page" if "html" in kind or response.text.lstrip()[:1] == "<" else kind
        raise ConnectionProblem(
            f"{_where(url)} did not answer with JSON (it sent {looks}); is this the "
            "server's API address?"
        ) from None


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def _entry_window(entry: Mapping[str, Any]) -> int | None:
    meta = entry.get("meta")
    if isinstance(meta, Mapping):
        for key in ("n_ctx", "n_ctx_train"):
            if (found := _positive(meta.get(key))) is not None:
                return found
    for key in (
        "loaded_context_length",
        "max_context_length",
        "context_length",
        "context_window",
        "max_model_len",
    ):
        if (found := _positive(entry.get(key))) is not None:
            return found
    return None


def _openai_list(body: Any, where: str) -> list[Mapping[str, Any]]:
    entries = body.get("data") if isinstance(body, Mapping) else None
    if not isinstance(entries, list):
        raise ConnectionProblem(f"{where} answered, but not with a model list ('data' is missing)")
    if len(entries) > MAX_MODELS:
        log.warning("%s lists %d models; the first %d are kept", where, len(entries), MAX_MODELS)
    return [e for e in entries[:MAX_MODELS] if isinstance(e, Mapping)]


def _named_embedding(model_id: str) -> bool:
    """Whether a model's id says it embeds (nomic-embed-text, text-embedding-3-small)."""
    return "embed" in model_id.lower()


def _chat_models(entries: Sequence[Mapping[str, Any]], window: int | None = None,
                 ) -> tuple[ConnectionModel, ...]:
    found: dict[str, ConnectionModel] = {}
    for entry in entries:
        name = entry.get("id")
        kind = str(entry.get("type") or "")
        # Embedding models share the list on LM Studio and others; they cannot chat.
        if not isinstance(name, str) or not name or kind == "embeddings" or _named_embedding(name):
            continue
        found[name] = ConnectionModel(name, window or _entry_window(entry))
    return tuple(found[n] for n in sorted(found))


async def _openai_models(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> tuple[ConnectionModel, ...]:
    base = connection.api_base or ""
    body = await _get_json(client, f"{base}/models", headers)
    return _chat_models(_openai_list(body, _where(base)))


async def _llamacpp_models(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> tuple[ConnectionModel, ...]:
    base = connection.api_base or ""
    entries = _openai_list(await _get_json(client, f"{base}/models", headers), _where(base))
    return _chat_models(entries, await _props_window(connection, client, headers))


async def _props_window(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> int | None:
    """The window a llama.cpp server was started with (`/props`), which beats the one the
    model was trained for; None when the server has no `/props`."""
    try:
        body = await _get_json(client, f"{connection.server_root}/props", headers)
    except ConnectionProblem:
        return None
    if not isinstance(body, Mapping):
        return None
    settings = body.get("default_generation_settings")
    if isinstance(settings, Mapping) and (found := _positive(settings.get("n_ctx"))):
        return found
    return _positive(body.get("n_ctx"))


async def _lmstudio_models(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> tuple[ConnectionModel, ...]:
    """LM Studio's own list (`/api/v0/models`) has each model's `max_context_length`;
    older versions only have the OpenAI one."""
    root = connection.server_root
    try:
        body = await _get_json(client, f"{root}/api/v0/models", headers)
    except ConnectionProblem as exc:
        if "HTTP 404" not in str(exc):
            raise
        return await _openai_models(connection, client, headers)
    return _chat_models(_openai_list(body, _where(root)))


async def _ollama_listed(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> list[tuple[str, Mapping[str, Any], Any]]:
    """Each model Ollama lists: its name, its `/api/tags` entry and what `/api/show` says of
    it (None past `SHOW_LIMIT`, or when it did not answer)."""
    root = connection.server_root
    body = await _get_json(client, f"{root}/api/tags", headers)
    entries = body.get("models") if isinstance(body, Mapping) else None
    if not isinstance(entries, list):
        raise ConnectionProblem(f"{_where(root)} answered, but not with Ollama's model list")
    by_name: dict[str, Mapping[str, Any]] = {}
    for e in entries[:MAX_MODELS]:
        if isinstance(e, Mapping) and (e.get("model") or e.get("name")):
            by_name.setdefault(str(e.get("model") or e.get("name")), e)
    names = sorted(by_name)
    gate = asyncio.Semaphore(SHOW_CONCURRENCY)

    async def show(name: str) -> Any:
        async with gate:
            try:
                return await _get_json(
                    client, f"{root}/api/show", headers, method="POST", body={"model": name}
                )
            except ConnectionProblem:
                return None

    shown = await asyncio.gather(*(show(n) for n in names[:SHOW_LIMIT]))
    padded = [*shown, *([None] * (len(names) - len(shown)))]
    return [(n, by_name[n], s) for n, s in zip(names, padded, strict=True)]


# Model families Ollama lists for text-embedding models (BERT and its kin encode, never chat):
# the word a server without `capabilities` in `/api/show` (before 0.6.4) goes by.
EMBEDDING_FAMILIES = frozenset({"bert", "nomic-bert", "nomic-bert-moe", "jina-bert-v2",
                                "xlm-roberta"})


def _ollama_embeds(name: str, entry: Mapping[str, Any], shown: Any) -> bool:
    """Whether an Ollama model only embeds: its `capabilities` say so (bge-m3, all-minilm
    and snowflake-arctic-embed carry no "embed" in every name), or, from a server that does
    not list them, its family or its name does."""
    capabilities = shown.get("capabilities") if isinstance(shown, Mapping) else None
    if isinstance(capabilities, list) and capabilities:
        return "embedding" in capabilities and "completion" not in capabilities
    families: set[str] = set()
    for details in (entry.get("details"), shown.get("details") if isinstance(shown, Mapping)
                    else None):
        if isinstance(details, Mapping):
            families.add(str(details.get("family") or "").lower())
            listed = details.get("families")
            if isinstance(listed, list):
                families.update(str(f).lower() for f in listed)
    return _named_embedding(name) or bool(families & EMBEDDING_FAMILIES)


async def _ollama_models(
    connection: Connection, client: httpx.AsyncClient, headers: Mapping[str, str]
) -> tuple[ConnectionModel, ...]:
    listed = await _ollama_listed(connection, client, headers)
    return tuple(ConnectionModel(n, _ollama_window(s)) for n, e, s in listed
                 if not _ollama_embeds(n, e, s))  # an embedding model cannot chat


def _ollama_window(shown: Any) -> int | None:
    """The context length `/api/show` reports (`<arch>.context_length`), lowered to the
    `num_ctx` the model file sets, which is what Ollama actually serves."""
    if not isinstance(shown, Mapping):
        return None
    trained: int | None = None
    info = shown.get("model_info")
    if isinstance(info, Mapping):
        for key, value in info.items():
            if str(key).endswith(".context_length") and (found := _positive(value)):
                trained = found
                break
    served: int | None = None
    parameters = shown.get("parameters")
    if isinstance(parameters, str):
        match = re.search(r"^\s*num_ctx\s+(\d+)", parameters, re.MULTILINE)
        if match:
            served = _positive(int(match.group(1)))
    if trained and served:
        return min(trained, served)
    return served or trained


async def fetch_models(
    connection: Connection,
    client: httpx.AsyncClient,
    api_key: str | None = None,
) -> tuple[ConnectionModel, ...]:
    """Ask the connection's server which models it offers, with their windows.

    Raises `ConnectionProblem` saying what went wrong (nothing listening, no answer in time,
    an HTTP error in the server's own words, a web page instead of JSON). Hosted providers
    and the bundled model list nothing here: their models are known in advance.
    """
    if connection.kind not in SERVER_KINDS:
        return connection.offered()
    headers = request_headers(connection, api_key)
    if connection.kind == "ollama":
        return await _ollama_models(connection, client, headers)
    if connection.kind == "lmstudio":
        return await _lmstudio_models(connection, client, headers)
    if connection.kind == "llamacpp":
        return await _llamacpp_models(connection, client, headers)
    return await _openai_models(connection, client, headers)


def list_client(timeout: httpx.Timeout | float | None = None) -> httpx.AsyncClient:
    """An HTTP client for model lists. A system proxy is never used for loopback servers."""
    return httpx.AsyncClient(timeout=timeout or LIST_TIMEOUT, trust_env=False)


# A hosted OpenAI key offers these; its model list holds hundreds of others.
OPENAI_EMBEDDING_MODELS = ("text-embedding-3-small", "text-embedding-3-large")


async def fetch_embedding_models(
    connection: Connection,
    client: httpx.AsyncClient,
    api_key: str | None = None,
) -> tuple[str, ...]:
    """The embedding models the connection's server offers: those its list marks as such
    (LM Studio's `type`, Ollama's `capabilities` or family), or whose name says so. Raises
    `ConnectionProblem` as `fetch_models` does."""
    if connection.kind == "hosted":
        return OPENAI_EMBEDDING_MODELS if connection.provider == "openai" else ()
    if connection.kind not in SERVER_KINDS:
        return ()
    headers = request_headers(connection, api_key)
    if connection.kind == "ollama":
        return tuple(n for n, e, s in await _ollama_listed(connection, client, headers)
                     if _ollama_embeds(n, e, s))
    base = connection.api_base or ""
    if connection.kind == "lmstudio":
        try:
            listed = _openai_list(await _get_json(
                client, f"{connection.server_root}/api/v0/models", headers), _where(base))
        except ConnectionProblem:
            listed = _openai_list(await _get_json(client, f"{base}/models", headers),
                                  _where(base))
    else:
        listed = _openai_list(await _get_json(client, f"{base}/models", headers), _where(base))
    return tuple(sorted({str(e["id"]) for e in listed if isinstance(e.get("id"), str)
                         and (e.get("type") == "embeddings" or _named_embedding(e["id"]))}))
