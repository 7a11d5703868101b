"""Embedding models beside the offline default, where the user has them: an OpenAI-compatible
`/v1/embeddings` (LM Studio, a llama.cpp server, a hosted key), Ollama's `/api/embed`, and an
embedding GGUF from the model library run in this process by llama_cpp.

`SearchModel` names one of them as the search-model setting keeps it; `embedder_for` builds
its embedder. Every answer is read with a cap on its bytes and a deadline
(`bounded_http.fetch`), and anything that goes wrong is one line (`EmbedderUnavailable`).
`embed` is synchronous like the offline models': callers run it on worker threads, where each
batch is one short event loop of its own.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from ..core.bounded_read import MB, Bounds, ReadLimitError
from .embeddings import EMBED_CHARS, Embedder, EmbedderUnavailable, IdleRelease

if TYPE_CHECKING:
    import httpx
    import numpy as np

SearchModelKind = Literal["openai", "ollama", "gguf"]
# Passages sent per request: servers batch well, and a slice of 64 keeps one answer small.
REQUEST_BATCH = 64
# 64 vectors of 4,096 floats as JSON text are about 6 MB; a server sending more is not
# answering the question asked.
EMBED_BOUNDS = Bounds(cap=32 * MB, deadline=120.0)
OFFLINE_LABEL = "offline (built in)"


@dataclass(frozen=True, slots=True)
class SearchModel:
    """An embedding model the user chose for search. `base_url`: the server (the model
    file's path for a GGUF); `key_account`: the keyring entry of its key ("" for none)."""

    kind: SearchModelKind
    model: str
    base_url: str = ""
    key_account: str = ""

    @property
    def name(self) -> str:
        """Stable and distinct per server and model: vectors of another name are re-embedded."""
        if self.kind == "gguf":
            return f"gguf:{Path(self.base_url).name}"
        host = urlsplit(self.base_url).netloc or self.base_url
        return f"{self.kind}:{self.model}@{host}"

    def to_setting(self) -> dict[str, str]:
        return {"kind": self.kind, "model": self.model, "base_url": self.base_url,
                "key_account": self.key_account}

    @classmethod
    def from_setting(cls, value: object) -> SearchModel | None:
        """The model a saved setting names, None for the offline default (or a value this
        version does not understand)."""
        if not isinstance(value, Mapping):
            return None
        kind = value.get("kind")
        model = value.get("model")
        if kind not in ("openai", "ollama", "gguf") or not isinstance(model, str) or not model:
            return None
        return cls(kind, model, str(value.get("base_url") or ""),
                   str(value.get("key_account") or ""))


def _unit_rows(rows: Sequence[Sequence[float]], count: int, what: str) -> np.ndarray[Any, Any]:
    import numpy as np

    try:
        vectors = np.asarray(rows, dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise EmbedderUnavailable(f"{what} answered vectors that are not numbers") from exc
    if vectors.ndim != 2 or vectors.shape[0] != count or vectors.shape[1] == 0:
        raise EmbedderUnavailable(f"{what} answered {vectors.shape[0] if vectors.ndim else 0} "
                                  f"vectors for {count} passages")
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return vectors / np.where(norms > 0, norms, 1.0)


class ServerEmbedder:
    """An embedding model on a server: OpenAI-compatible (`kind` "openai") or Ollama. `ndim`
    is learned from the first answer (a call of `embed` for it when asked before any)."""

    def __init__(self, model: SearchModel, key: str | None = None, *,
                 bounds: Bounds = EMBED_BOUNDS, batch: int = REQUEST_BATCH) -> None:
        self.model = model
        self._key = key
        self._bounds = bounds
        self._batch = batch
        self._ndim = 0
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.model.name

    @property
    def ndim(self) -> int:
        if not self._ndim:
            self.embed(["dimensions"])
        return self._ndim

    @property
    def _url(self) -> str:
        root = self.model.base_url.rstrip("/")
        if self.model.kind == "ollama":
            return f"{root.removesuffix('/v1')}/api/embed"
        return f"{root}/embeddings" if root.endswith("/v1") else f"{root}/v1/embeddings"

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        import numpy as np

        if not texts:
            return np.zeros((0, self._ndim), dtype=np.float32)
        batches = [[t[:EMBED_CHARS] for t in texts[i:i + self._batch]]
                   for i in range(0, len(texts), self._batch)]
        vectors = np.vstack(asyncio.run(self._ask_all(batches)))
        with self._lock:
            if self._ndim and vectors.shape[1] != self._ndim:
                raise EmbedderUnavailable(f"{self.name} changed its vectors' size from "
                                          f"{self._ndim} to {vectors.shape[1]}")
            self._ndim = int(vectors.shape[1])
        return vectors

    async def _ask_all(self, batches: list[list[str]]) -> list[np.ndarray[Any, Any]]:
        """Each batch asked in turn over one connection."""
        import httpx

        async with httpx.AsyncClient(timeout=self._bounds.deadline) as client:
            return [await self._ask(client, batch) for batch in batches]

    async def _ask(self, client: httpx.AsyncClient, texts: list[str]) -> np.ndarray[Any, Any]:
        import httpx

        from .bounded_http import fetch

        what = f"{self.name} ({self._url})"
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        try:
            response = await fetch(client, "POST", self._url, what=what,
                                   bounds=self._bounds, headers=headers,
                                   json={"model": self.model.model, "input": texts})
        except ReadLimitError as exc:
            raise EmbedderUnavailable(str(exc)) from exc
        except httpx.HTTPError as exc:
            raise EmbedderUnavailable(f"{what} did not answer: {exc or type(exc).__name__}"
                                      ) from exc
        if response.status_code != 200:
            raise EmbedderUnavailable(f"{what} answered HTTP {response.status_code}: "
                                      f"{' '.join(response.text.split())[:200]}")
        try:
            body = response.json()
            if self.model.kind == "ollama":
                rows = body["embeddings"]
            else:
                data = sorted(body["data"], key=lambda d: int(d.get("index", 0)))
                rows = [d["embedding"] for d in data]
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise EmbedderUnavailable(f"{what} did not answer with embeddings") from exc
        return _unit_rows(rows, len(texts), what)


class GGUFEmbedder:
    """An embedding GGUF run by llama_cpp in this process (loaded on the first `embed`)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._llm: Any = None
        self._ndim = 0
        self._lock = threading.Lock()
        self.idle = IdleRelease(self.release)  # as the offline models: let go when unused

    @property
    def name(self) -> str:
        return SearchModel("gguf", self.path.stem, str(self.path)).name

    @property
    def ndim(self) -> int:
        if not self._ndim:
            self.idle.enter()
            try:
                self.load()
            finally:
                self.idle.leave()
        return self._ndim

    def release(self) -> None:
        with self._lock:
            self._llm = None

    def load(self) -> None:
        with self._lock:
            if self._llm is not None:
                return
            try:
                from llama_cpp import Llama
            except ImportError as exc:
                raise EmbedderUnavailable(f"llama_cpp is not installed: {exc}") from exc
            try:
                self._llm = Llama(model_path=str(self.path), embedding=True, verbose=False)
            except (OSError, ValueError, RuntimeError) as exc:
                raise EmbedderUnavailable(f"llama.cpp could not load {self.path.name} as an "
                                          f"embedding model: {exc}") from exc
            self._ndim = int(self._llm.n_embd())

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        import numpy as np

        if not texts:
            return np.zeros((0, self.ndim), dtype=np.float32)
        self.idle.enter()
        try:
            self.load()
            with self._lock:
                answers = [np.asarray(self._llm.embed(t[:EMBED_CHARS]), dtype=np.float32)
                           for t in texts]
        finally:
            self.idle.leave()
        # a model without pooling answers one vector per token: their mean is the passage's
        rows: list[Any] = [a.mean(axis=0) if a.ndim == 2 else a for a in answers]
        return _unit_rows(rows, len(texts), self.path.name)


def gguf_embeds(path: Path) -> bool:
    """Whether this GGUF is an embedding model (its header says so) that llama_cpp, being
    installed, can run. Nothing is loaded: choosing it loads it, and refuses it if that
    fails."""
    import importlib.util

    from .gguf_header import GGUFError, read_header

    try:
        embeds = read_header(path).embeds
    except (GGUFError, OSError):
        return False
    return embeds and importlib.util.find_spec("llama_cpp") is not None


def embedder_for(model: SearchModel, key: str | None = None) -> Embedder:
    """The embedder of a chosen search model (nothing is loaded or asked yet)."""
    if model.kind == "gguf":
        return GGUFEmbedder(Path(model.base_url))
    return ServerEmbedder(model, key)
