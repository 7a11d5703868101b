"""The real token counter: tiktoken (o200k_base or cl100k_base, chosen per model), loaded
fully offline from the encoding files litellm ships, without importing litellm."""

from __future__ import annotations

import gc
import importlib.util
import os
import sys
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ..core.memory import return_freed_memory
from ..core.tokens import CachedCounter, messages_tokens

# tiktoken caches each encoding under sha1(source URL); litellm bundles these two files.
ENCODING_FILES = {
    "cl100k_base": "9b5ad71b2ce5302211f9c61530b329a4922fc6a4",
    "o200k_base": "fb374d419588a4632f3f557e76b4b70aebbca790",
}
DEFAULT_ENCODING = "o200k_base"

# OpenAI families tokenized with cl100k_base; every newer model (gpt-4o, gpt-4.1, o-series,
# gpt-5) uses o200k_base, and so do models without a public tokenizer here, whose drift the
# occupancy calibration measures and corrects.
_CL100K_PREFIXES = ("gpt-3.5", "gpt-35", "text-embedding-ada", "text-embedding-3", "davinci-002",
                    "babbage-002")
_O200K_GPT4_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "chatgpt-4o")


class TokenizerUnavailableError(RuntimeError):
    """No offline copy of the encoding was found; counting would need the network."""


def encoding_for_model(model: str) -> str:
    """The tiktoken encoding that counts `model` (a litellm model string) best."""
    name = model.lower().rsplit("/", 1)[-1]
    if name.startswith(_O200K_GPT4_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES) or name == "gpt-4" or name.startswith("gpt-4-"):
        return "cl100k_base"
    return DEFAULT_ENCODING


def bundled_encodings_dir() -> Path | None:
    """litellm's `litellm_core_utils/tokenizers` directory, found without importing litellm."""
    try:
        spec = importlib.util.find_spec("litellm")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for root in spec.submodule_search_locations:
        candidate = Path(root) / "litellm_core_utils" / "tokenizers"
        if candidate.is_dir():
            return candidate
    return None


def configure_offline_cache(encoding: str = DEFAULT_ENCODING) -> Path:
    """Point TIKTOKEN_CACHE_DIR at a directory holding `encoding` so tiktoken never downloads.

    A user's own TIKTOKEN_CACHE_DIR is kept when it already holds the file.
    """
    filename = ENCODING_FILES[encoding]
    current = os.environ.get("TIKTOKEN_CACHE_DIR")
    if current and (Path(current) / filename).is_file():
        return Path(current)
    bundled = bundled_encodings_dir()
    if bundled is not None and (bundled / filename).is_file():
        os.environ["TIKTOKEN_CACHE_DIR"] = str(bundled)
        return bundled
    raise TokenizerUnavailableError(
        f"The {encoding} token tables were not found offline (looked in "
        f"{current or 'TIKTOKEN_CACHE_DIR (unset)'} and litellm's bundled tokenizers). "
        "Reinstall Treechat; token counts cannot be computed without them."
    )


_lock = threading.Lock()
_encodings: dict[str, Any] = {}


def _load_encoding(name: str) -> Any:
    with _lock:
        enc = _encodings.get(name)
        if enc is None:
            configure_offline_cache(name)
            import tiktoken.registry

            if isinstance(tiktoken.registry.ENCODINGS.get(name), DeferredEncoding):
                del tiktoken.registry.ENCODINGS[name]  # the stand-in `release_encodings` left
            enc = tiktoken.registry.get_encoding(name)
            # The Python copy of the ranks (~28 MB for o200k_base) is only read to pickle
            # the encoding; counting and decoding use the Rust tables built from it.
            if isinstance(getattr(enc, "_mergeable_ranks", None), dict):
                enc._mergeable_ranks = {}
            _encodings[name] = enc
        return enc


def _encoding(name: str) -> Any:
    return _encodings.get(name) or _load_encoding(name)


def release_encodings() -> None:
    """Let go of every loaded encoding (ours and tiktoken's registry's) and give the memory
    back to the system. Counters keep working: the next count loads the tables again.

    For a one-shot command whose counting is done: `treechat send` counts the context
    before the request, then loads litellm (190 MB), which reuses the pages the tables
    (45 MB for o200k_base) held instead of stacking on them. The window keeps its tables:
    it counts on every keystroke.

    tiktoken's registry keeps a `DeferredEncoding` in each one's place: litellm asks it for
    the encoding to price every stream at its start, counting an empty completion, and
    must not load 45 MB for that; it loads them if it counts real text."""
    with _lock:
        names = list(_encodings)
        _encodings.clear()
    registry = sys.modules.get("tiktoken.registry")
    cached = getattr(registry, "ENCODINGS", None)
    if isinstance(cached, dict):
        for name in names:
            cached[name] = DeferredEncoding(name)
    gc.collect()
    return_freed_memory()


class DeferredEncoding:
    """A tiktoken encoding that loads at its first use, through the loader above (shared with
    every counter, Python ranks dropped).

    litellm hands its default encoding (cl100k_base) to every request as an argument, so its
    first call loads 40 MB of tables that an OpenAI-format request never reads; given this
    instead, litellm loads them only if it really counts with them."""

    def __init__(self, name: str) -> None:
        if name not in ENCODING_FILES:
            raise ValueError(f"unsupported encoding {name!r}")
        self.name = name

    @property
    def loaded(self) -> bool:
        return self.name in _encodings

    def __getattr__(self, attribute: str) -> Any:
        if attribute.startswith("__"):  # copy, pickle and friends probe these: no load
            raise AttributeError(attribute)
        return getattr(_encoding(self.name), attribute)

    def encode(self, text: str, *args: Any, **kwargs: Any) -> list[int]:
        """Empty text has no tokens whatever the encoding: nothing is loaded to say so."""
        return list(_encoding(self.name).encode(text, *args, **kwargs)) if text else []

    def encode_ordinary(self, text: str) -> list[int]:
        return list(_encoding(self.name).encode_ordinary(text)) if text else []

    def __repr__(self) -> str:
        return f"<DeferredEncoding {self.name!r}{' loaded' if self.loaded else ''}>"


class TiktokenCounter:
    """Counts with one tiktoken encoding. Special-token text in user content is counted as
    ordinary text, never rejected. The tables are loaded with the counter and looked up at
    each count, never pinned: `release_encodings` can let go of them."""

    def __init__(self, encoding: str = DEFAULT_ENCODING) -> None:
        if encoding not in ENCODING_FILES:
            raise ValueError(f"unsupported encoding {encoding!r}")
        self.encoding_name = encoding
        _load_encoding(encoding)

    def encode(self, text: str) -> list[int]:
        return list(_encoding(self.encoding_name).encode_ordinary(text))

    def count(self, text: str) -> int:
        return len(_encoding(self.encoding_name).encode_ordinary(text)) if text else 0

    def count_messages(self, messages: Iterable[Mapping[str, Any]]) -> int:
        return messages_tokens(messages, self.count)


class CachedTiktokenCounter(CachedCounter):
    """A `TiktokenCounter` behind the content-hash cache; also exposes `encode`."""

    __slots__ = ("raw",)

    def __init__(self, encoding: str = DEFAULT_ENCODING, maxsize: int = 65_536) -> None:
        raw = TiktokenCounter(encoding)
        super().__init__(raw.count, maxsize)
        self.raw = raw

    @property
    def encoding_name(self) -> str:
        return self.raw.encoding_name

    def encode(self, text: str) -> list[int]:
        return self.raw.encode(text)


_counters: dict[str, CachedTiktokenCounter] = {}


def counter_for(model: str) -> CachedTiktokenCounter:
    """The cached counter for a model (one per encoding, shared by every caller)."""
    name = encoding_for_model(model)
    with _lock:
        counter = _counters.get(name)
    if counter is None:
        counter = CachedTiktokenCounter(name)
        with _lock:
            counter = _counters.setdefault(name, counter)
    return counter
