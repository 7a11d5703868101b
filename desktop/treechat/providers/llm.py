"""The one module that imports litellm: lazily, on a background thread, and offline.

`import litellm` blocks for seconds, so it is loaded by `start_warmup()` off the calling thread
and awaited with `ensure_loaded()`. Model facts (window, output limit, prices) live here too.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import gc
import importlib.util
import json
import logging
import os
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

from ..core.memory import (
    pause_automatic_collection,
    resume_automatic_collection,
    return_freed_memory,
)
from . import litellm_deferred
from .json_steps import loads_in_steps

log = logging.getLogger(__name__)

FALLBACK_WINDOW = 8192
"""Window assumed for a model litellm does not know: guessing low wastes a window, guessing
high fails the turn (CTX-001)."""

FALLBACK_MAX_OUTPUT = 4096

# Providers whose models honour explicit `cache_control` blocks on the wire (CTX-005).
_ANTHROPIC_PROVIDERS = frozenset({"anthropic"})
# Hosts that serve Claude among other models and pass its `cache_control` marks on (litellm
# keeps them for OpenRouter models whose name says claude, and moves them into content blocks).
_CLAUDE_HOSTS = frozenset(
    {"bedrock", "bedrock_converse", "vertex_ai", "vertex_ai_beta", "openrouter"}
)

_lock = threading.Lock()
_loaded: concurrent.futures.Future[ModuleType] | None = None
_window_cache: dict[str, int] = {}
_output_cache: dict[str, int] = {}


def litellm_tokenizer_dir() -> Path | None:
    """litellm's bundled tiktoken files (cl100k_base, o200k_base), found without importing it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"
    return path if path.is_dir() else None


def configure_tokenizer_cache() -> None:
    """Point tiktoken at the bundled encodings so counting tokens never reaches the network."""
    if os.environ.get("TIKTOKEN_CACHE_DIR"):
        return
    path = litellm_tokenizer_dir()
    if path is not None:
        os.environ["TIKTOKEN_CACHE_DIR"] = str(path)


def _prepare_environment() -> None:
    # The cost map would otherwise be fetched from the internet at import time.
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    os.environ.setdefault("LITELLM_TELEMETRY", "False")
    os.environ.setdefault("LITELLM_LOG", "ERROR")
    # OpenAI-format calls through litellm's own HTTP handler instead of the OpenAI SDK: the
    # SDK's per-chunk model construction is a third of the CPU a streamed token costs (1.7 ms
    # -> 1.1 ms per chunk measured), and every provider test passes on either path.
    os.environ.setdefault("EXPERIMENTAL_OPENAI_BASE_LLM_HTTP_HANDLER", "True")
    configure_tokenizer_cache()
    bypass_proxy_for_loopback()


def bypass_proxy_for_loopback() -> None:
    """Local models and servers live on 127.0.0.1: a system proxy must never see them."""
    for name in ("NO_PROXY", "no_proxy"):
        present = [h for h in os.environ.get(name, "").split(",") if h.strip()]
        wanted = [h for h in ("127.0.0.1", "localhost", "::1") if h not in present]
        if wanted:
            os.environ[name] = ",".join([*present, *wanted])


def _import() -> ModuleType:
    _prepare_environment()
    original = json.loads
    json.loads = loads_in_steps(original)
    # A full collection in the middle of this import walks millions of new objects while
    # holding the GIL (hundreds of ms of frozen GUI). Collect nothing during the import and
    # the warm-up, then freeze what they built so later collections never walk it either.
    pause_automatic_collection()
    try:
        with litellm_deferred.deferring():
            import litellm
        litellm_deferred.restore()

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.drop_params = True
        # Retries are decided by the caller (one overflow retry, nothing else), never hidden.
        litellm.num_retries = 0
        from .sse_guard import install as count_unreadable_stream_lines

        iterator: type | None
        try:
            from litellm.llms.base_llm.base_model_iterator import BaseModelResponseIterator
            iterator = BaseModelResponseIterator
        except ImportError:  # a later litellm moved it: replies are simply not marked
            iterator = None
        count_unreadable_stream_lines(iterator)
        _cap_stream_lines()
        _cap_error_answers()
        _defer_default_encoding()
        _warm_paths(litellm)
    finally:
        json.loads = original
        gc.freeze()
        resume_automatic_collection()
    return_freed_memory()  # what the import parsed and dropped (the price list's text...)
    return litellm


# What litellm loads on the first streamed request (observed with litellm 1.110 on both wire
# formats). Names a later litellm no longer has are skipped.
_FIRST_CALL_MODULES = (
    "anyio._backends._asyncio",
    "litellm._service_logger",
    "litellm.integrations.generic_api.generic_api_callback",
    "litellm.litellm_core_utils.duration_parser",
    "litellm.litellm_core_utils.logging_callback_manager",
    "litellm.llms.anthropic.chat.transformation",
    "litellm.llms.anthropic.completion.transformation",
    "litellm.llms.bedrock.chat.invoke_transformations.amazon_ai21_transformation",
    "litellm.llms.edenai.chat.transformation",
    "litellm.llms.fal_ai.chat.transformation",
    "litellm.llms.fal_ai.image_generation",
    "litellm.llms.github_copilot.authenticator",
    "litellm.llms.github_copilot.github_host",
    "litellm.llms.github_copilot.per_user_auth",
    "litellm.llms.litellm_proxy.chat.transformation",
    "litellm.llms.openai.chat.gpt_audio_transformation",
    "litellm.llms.openai_like.dynamic_config",
    "litellm.proxy._types",
    "litellm.proxy.mcp_server.stdio_gate",
    "litellm.proxy.openai_files_endpoints.common_utils",
    "litellm.proxy.spend_tracking.savings",
    "litellm.types.integrations.compression_interception",
    "litellm.types.integrations.slack_alerting",
    "litellm.types.litellm_core_utils.streaming_chunk_builder_utils",
)


def _cap_stream_lines() -> None:
    from .sse_guard import install_line_cap

    try:
        from litellm.llms.custom_httpx.sse_lines import _SSELineSplitter
    except ImportError:  # a later litellm moved it: its own line handling applies
        return
    install_line_cap(_SSELineSplitter)


def _cap_error_answers() -> None:
    from .error_body import install

    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler
    except ImportError:  # a later litellm moved it: error answers are read as it reads them
        return
    install(AsyncHTTPHandler)


def _defer_default_encoding() -> None:
    """litellm's default encoding (cl100k_base, 40 MB resident) is passed as an argument of
    every request and put in the tokenizer choice its cost calculator makes, though an
    OpenAI-format request to a gpt-4o model never counts with it. litellm's module for it does
    two things: point tiktoken at the bundled files (`_prepare_environment` did) and load the
    tables; in its place goes one whose encoding loads the same tables when something really
    counts, through the loader the counters share."""
    from .tokenizer import DeferredEncoding

    name = "litellm.litellm_core_utils.default_encoding"
    if name in sys.modules:
        return
    encoding = DeferredEncoding("cl100k_base")
    deferred = ModuleType(name, "litellm's default encoding, loaded at its first use")
    deferred.encoding = encoding  # type: ignore[attr-defined]
    sys.modules[name] = deferred
    package = sys.modules.get("litellm.litellm_core_utils")
    if package is not None:
        package.default_encoding = deferred  # type: ignore[attr-defined]
    main = sys.modules.get("litellm.main")
    if main is not None and "encoding" not in vars(main):
        main.encoding = encoding  # type: ignore[attr-defined]


def _warm_paths(litellm: ModuleType) -> None:
    """Load here what the first request would otherwise load while the user waits (model
    facts, request building, streaming and logging)."""
    try:
        litellm.get_model_info("openai/gpt-4o")
    except Exception:  # warming is best effort; the real call reports real errors
        log.debug("litellm warm-up: model info failed", exc_info=True)
    for name in _FIRST_CALL_MODULES:
        try:
            importlib.import_module(name)
        except Exception:
            log.debug("litellm warm-up: %s not loaded", name, exc_info=True)


def _run_import(future: concurrent.futures.Future[ModuleType]) -> None:
    future.set_running_or_notify_cancel()  # from here on nobody can cancel the shared import
    try:
        module = _import()
    except BaseException as exc:
        future.set_exception(exc)
    else:
        future.set_result(module)


def start_warmup() -> concurrent.futures.Future[ModuleType]:
    """Begin importing litellm on a background thread (idempotent); returns its future."""
    global _loaded
    with _lock:
        if _loaded is None:
            _loaded = concurrent.futures.Future()
            threading.Thread(
                target=_run_import, args=(_loaded,), name="treechat-litellm-warmup", daemon=True
            ).start()
        return _loaded


def is_loaded() -> bool:
    future = _loaded
    return future is not None and future.done() and future.exception() is None


async def ensure_loaded() -> ModuleType:
    """litellm, imported off the event loop's thread; starts the warm-up if nobody did."""
    # shield: one cancelled send must not cancel the import every later call shares
    return await asyncio.shield(asyncio.wrap_future(start_warmup()))


def litellm_module() -> ModuleType:
    """litellm for synchronous callers (worker threads, the CLI); blocks until it is loaded."""
    return start_warmup().result()


async def aclose_clients() -> None:
    """Close the HTTP clients litellm keeps per event loop, on the loop that made the calls
    (`stream.shutdown_provider_loop()` does this for the provider thread)."""
    if not is_loaded():
        return
    litellm = litellm_module()
    # Anthropic streams through a module-wide client that litellm creates once and binds to
    # the loop that first used it; drop it so the next loop gets its own.
    shared = vars(litellm).pop("module_level_aclient", None)
    closer = getattr(shared, "close", None)
    if callable(closer):
        with contextlib.suppress(Exception):
            await closer()
    await litellm.close_litellm_async_clients()
    cache = getattr(litellm, "in_memory_llm_clients_cache", None)
    flush = getattr(cache, "flush_cache", None)
    if callable(flush):
        flush()
    # Let the transports finish closing on this loop.
    await asyncio.sleep(0)


async def _drop_authorization(request: Any) -> None:
    request.headers.pop("authorization", None)


def keyless_client(timeout: float | None) -> Any:
    """An HTTP client for litellm that sends no Authorization header, for a server that
    needs no key. Without it litellm fills the header in from `OPENAI_API_KEY` (leaking a
    real key to a local server) or a placeholder. Close it with `await client.close()`."""
    litellm_module()
    from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler

    return AsyncHTTPHandler(timeout=timeout, event_hooks={"request": [_drop_authorization]})


# --- model facts ----------------------------------------------------------------------


def provider_of(model: str) -> str:
    """The litellm provider prefix of a model id (`anthropic/claude-...` -> `anthropic`)."""
    head, sep, _ = model.partition("/")
    return head.lower() if sep else ""


def is_anthropic(model: str) -> bool:
    """Whether requests for `model` should carry Anthropic `cache_control` breakpoints: the
    one rule both the context engine (placing them) and the stream (keeping them) follow."""
    provider = provider_of(model)
    if provider in _ANTHROPIC_PROVIDERS:
        return True
    if provider in _CLAUDE_HOSTS:
        return "claude" in model.lower()
    return provider == "" and model.lower().startswith("claude")


def _model_info(model: str) -> dict[str, Any] | None:
    """litellm's facts about `model`: from its table, read without importing it, and from
    litellm itself for what the table does not list once litellm is loaded anyway."""
    from . import model_facts

    read, info = model_facts.lookup(model)
    if info is not None or (read and not is_loaded()):
        return info
    litellm = litellm_module()
    try:
        found = litellm.get_model_info(model)
    except Exception:
        return None
    return dict(found) if found else None


def _definitive(info: dict[str, Any] | None) -> bool:
    """Whether an answer may be kept: a model the table lists, or litellm's own word (a
    model the table does not list is asked again once litellm is loaded)."""
    return info is not None or is_loaded()


def model_window(model: str) -> int:
    """The model's input window in tokens (litellm's `max_input_tokens`), cached per model;
    `FALLBACK_WINDOW` when litellm does not know the model."""
    cached = _window_cache.get(model)
    if cached is not None:
        return cached
    info = _model_info(model)
    value = (info or {}).get("max_input_tokens") or (info or {}).get("max_tokens")
    window = int(value) if isinstance(value, int) and value > 0 else FALLBACK_WINDOW
    if _definitive(info):
        _window_cache[model] = window
    return window


def max_output_tokens(model: str) -> int:
    """The most the model may write in one reply; `FALLBACK_MAX_OUTPUT` when unknown."""
    cached = _output_cache.get(model)
    if cached is not None:
        return cached
    info = _model_info(model)
    value = (info or {}).get("max_output_tokens")
    limit = int(value) if isinstance(value, int) and value > 0 else FALLBACK_MAX_OUTPUT
    if _definitive(info):
        _output_cache[model] = limit
    return limit


def known_window(model: str) -> int | None:
    """The model's window when litellm knows the model, else None (the caller then says
    its window is estimated)."""
    info = _model_info(model)
    value = (info or {}).get("max_input_tokens") or (info or {}).get("max_tokens")
    return int(value) if isinstance(value, int) and value > 0 else None


def price_per_million(model: str) -> tuple[float, float] | None:
    """USD per million input and output tokens when litellm prices the model, else None.
    A model its table prices at nothing is priced ($0), as its requests' cost says
    (`reservation_cost`, `request_cost`), not unpriced."""
    info = _model_info(model)
    if not info:
        return None
    per_input, per_output = info.get("input_cost_per_token"), info.get("output_cost_per_token")
    if not (isinstance(per_input, int | float) and isinstance(per_output, int | float)):
        return None
    return max(float(per_input), 0.0) * 1_000_000, max(float(per_output), 0.0) * 1_000_000


def count_message_tokens(model: str, messages: list[dict[str, Any]]) -> int:
    """Local estimate of a request's prompt tokens with litellm's counter for the model."""
    litellm = litellm_module()
    return int(litellm.token_counter(model=model, messages=messages))


def count_text_tokens(model: str, text: str) -> int:
    litellm = litellm_module()
    return int(litellm.token_counter(model=model, text=text))


# --- cost -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cost:
    """What a request cost in USD. `priced` is False when litellm has no price for the
    model; the cost is then 0 and the ledger says so instead of guessing."""

    usd: float
    priced: bool


def clamp_cache_details(prompt_tokens: int, cache_read: int, cache_write: int) -> tuple[int, int]:
    """Cache details clamped to the prompt total they are part of, never negative: a provider
    that over-reports would otherwise negative-price the call (CTX-008)."""
    total = max(prompt_tokens, 0)
    read = min(max(cache_read, 0), total)
    write = min(max(cache_write, 0), total - read)
    return read, write


def request_cost(
    model: str, prompt_tokens: int, output_tokens: int, cache_read: int = 0, cache_write: int = 0
) -> Cost:
    """Committed cost of a request. `prompt_tokens` is the total (cached tokens included);
    litellm subtracts the cached portions and prices them at their own rates."""
    litellm = litellm_module()
    from litellm.types.utils import PromptTokensDetailsWrapper, Usage

    total = max(prompt_tokens, 0)
    out = max(output_tokens, 0)
    read, write = clamp_cache_details(total, cache_read, cache_write)
    usage = Usage(
        prompt_tokens=total,
        completion_tokens=out,
        total_tokens=total + out,
        prompt_tokens_details=PromptTokensDetailsWrapper(
            cached_tokens=read, cache_creation_tokens=write
        ),
    )
    try:
        prompt_cost, output_cost = litellm.cost_per_token(model=model, usage_object=usage)
    except Exception:
        return Cost(0.0, priced=False)
    usd = float(prompt_cost) + float(output_cost)
    return Cost(max(usd, 0.0), priced=True)


def reservation_cost(model: str, prompt_tokens: int, output_tokens: int) -> Cost:
    """Ceiling for a call not yet made: the uncached price, because a cache hit is never
    guaranteed (CTX-008). Until litellm is loaded, from its table's per-token prices (what
    its own reckoning of an uncached call comes to below its long-prompt tiers)."""
    if not is_loaded():
        from . import model_facts

        read, info = model_facts.lookup(model)
        if read:
            return _table_cost(info, prompt_tokens, output_tokens)
    return request_cost(model, prompt_tokens, output_tokens)


def _table_cost(info: dict[str, Any] | None, prompt_tokens: int, output_tokens: int) -> Cost:
    per_input = (info or {}).get("input_cost_per_token")
    per_output = (info or {}).get("output_cost_per_token")
    if not (isinstance(per_input, int | float) and isinstance(per_output, int | float)):
        return Cost(0.0, priced=False)
    usd = max(prompt_tokens, 0) * float(per_input) + max(output_tokens, 0) * float(per_output)
    return Cost(max(usd, 0.0), priced=True)


# --- request parameters ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ModelCapabilities:
    """Which of a chat's request parameters the model takes (litellm's own view of it, from
    `get_supported_openai_params` and `supports_reasoning`). A parameter the model does not
    take is neither shown nor sent."""

    temperature: bool = True
    top_p: bool = True
    max_tokens: bool = True
    reasoning_effort: bool = False
    thinking_budget: bool = False

    @property
    def reasoning(self) -> bool:
        return self.reasoning_effort or self.thinking_budget


_capability_cache: dict[str, ModelCapabilities] = {}


_vision_cache: dict[str, bool] = {}


def supports_vision(model: str) -> bool:
    """Whether `model` takes image content blocks, by litellm's model list (blocks until
    litellm is loaded: call it off the GUI thread). A model it does not know cannot."""
    cached = _vision_cache.get(model)
    if cached is not None:
        return cached
    litellm = litellm_module()
    try:
        seen = bool(litellm.supports_vision(model=model))
    except Exception:
        seen = False
    _vision_cache[model] = seen
    return seen


def model_capabilities(model: str) -> ModelCapabilities:
    """What `model` accepts, cached per model (blocks until litellm is loaded: call it off
    the GUI thread). A model litellm cannot place gets the common three and no reasoning."""
    cached = _capability_cache.get(model)
    if cached is not None:
        return cached
    litellm = litellm_module()
    try:
        _, provider, _, _ = litellm.get_llm_provider(model)
    except Exception:
        provider = provider_of(model) or None
    try:
        params = set(
            litellm.get_supported_openai_params(model=model, custom_llm_provider=provider) or ()
        )
    except Exception:
        params = set()
    try:
        reasoning = bool(litellm.supports_reasoning(model=model, custom_llm_provider=provider))
    except Exception:
        reasoning = False
    if not params:
        params = {"temperature", "top_p", "max_tokens"}
    caps = ModelCapabilities(
        temperature="temperature" in params,
        top_p="top_p" in params,
        max_tokens=bool({"max_tokens", "max_completion_tokens"} & params),
        reasoning_effort=reasoning and "reasoning_effort" in params,
        thinking_budget=reasoning and "thinking" in params,
    )
    _capability_cache[model] = caps
    return caps


def request_parameters(
    model: str,
    *,
    temperature: float | None = None,
    top_p: float | None = None,
    reasoning_effort: str | None = None,
    thinking_budget: int | None = None,
) -> dict[str, Any]:
    """The completion keyword arguments for a chat's parameters, keeping only those `model`
    takes (a setting the model has no use for is left out, not sent for litellm to drop).
    The reply-token limit travels as `TurnRequest.max_tokens`."""
    caps = model_capabilities(model)
    out: dict[str, Any] = {}
    if temperature is not None and caps.temperature:
        out["temperature"] = temperature
    if top_p is not None and caps.top_p:
        out["top_p"] = top_p
    if thinking_budget is not None and caps.thinking_budget:
        out["thinking"] = {"type": "enabled", "budget_tokens": int(thinking_budget)}
    elif reasoning_effort is not None and caps.reasoning_effort:
        out["reasoning_effort"] = reasoning_effort
    return out
