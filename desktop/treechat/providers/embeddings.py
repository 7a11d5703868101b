"""Embedders: text -> unit vectors for the semantic index.

The offline default is WordLlama (`wordllama` on PyPI ships its 16 MB of weights and its
tokenizer, so it needs no download): a static token-embedding model, ~0.5 s to load and a few
thousand passages a second on one core. Its loader looks for the tokenizer under
`<cache_dir>/tokenizers/`, so the cache is pointed at the package's own folder, where both
files are, and downloads are disabled: a missing file is an error, never a network call.

Loading is lazy (the first `embed`), under a lock, and is the caller's to keep off the GUI
thread (the retrieval engine calls it from a worker). A loaded model is let go again after
`RELEASE_AFTER_S` without use (`IdleRelease`): the window searches now and then, and the two
offline models hold about 200 MB between searches otherwise.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    import numpy as np

# Characters of a passage the embedder reads: WordLlama averages token vectors, so a long
# passage's meaning is its beginning's as much as its end's; this caps the tokenizer's work.
EMBED_CHARS = 2000
RELEASE_AFTER_S = 120.0


class IdleRelease:
    """Calls `release` once `seconds` have passed with no use in progress: each use is
    bracketed by `enter` / `leave`, and the last `leave` starts the count again. The timer is
    a daemon thread, so it never holds a process open."""

    def __init__(self, release: Callable[[], None], seconds: float = RELEASE_AFTER_S) -> None:
        self.seconds = seconds
        self._release = release
        self._lock = threading.Lock()
        self._busy = 0
        self._timer: threading.Timer | None = None

    def enter(self) -> None:
        with self._lock:
            self._busy += 1
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def leave(self) -> None:
        with self._lock:
            self._busy -= 1
            if self._busy == 0 and self.seconds > 0:
                self._timer = threading.Timer(self.seconds, self._expire)
                self._timer.daemon = True
                self._timer.start()

    def _expire(self) -> None:
        with self._lock:
            if self._busy or self._timer is None:
                return  # used again meanwhile
            self._timer = None
            self._release()
        from ..core.memory import collect_and_return_memory

        # never a collection on this timer's thread: where a window runs, its GUI thread
        # collects (a Qt object freed here would crash the process)
        collect_and_return_memory()


class Embedder(Protocol):
    """What the semantic index needs of a model: a stable name (vectors of another name are
    re-embedded), the vectors' size and the embedding itself (rows of unit length)."""

    @property
    def name(self) -> str: ...

    @property
    def ndim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]: ...


class EmbedderUnavailable(RuntimeError):
    """The embedding model could not be loaded (a damaged install)."""


class WordLlamaEmbedder:
    """The offline default: WordLlama l2_supercat, 256 dimensions."""

    def __init__(self, config: str = "l2_supercat", dim: int = 256) -> None:
        self._config = config
        self._dim = dim
        self._model: Any = None
        self._lock = threading.Lock()
        self.idle = IdleRelease(self.release)

    @property
    def name(self) -> str:
        return f"wordllama/{self._config}-{self._dim}"

    @property
    def ndim(self) -> int:
        return self._dim

    @property
    def loaded(self) -> bool:
        return self._model is not None

    def load(self) -> None:
        """Load the weights now (the first `embed` does it otherwise)."""
        with self._lock:
            if self._model is not None:
                return
            try:
                import wordllama
                from wordllama import WordLlama
            except ImportError as exc:  # pragma: no cover - a broken install
                raise EmbedderUnavailable(f"wordllama is not installed: {exc}") from exc
            here = Path(wordllama.__file__).parent
            try:
                self._model = WordLlama.load(config=self._config, dim=self._dim,
                                             cache_dir=here, disable_download=True)
            except (OSError, ValueError) as exc:
                raise EmbedderUnavailable(f"could not load the embedding model: {exc}") from exc

    def release(self) -> None:
        """Let go of the weights (the next `embed` loads them again)."""
        with self._lock:
            self._model = None

    def embed(self, texts: Sequence[str]) -> np.ndarray[Any, Any]:
        import numpy as np

        if not texts:
            return np.zeros((0, self._dim), dtype=np.float32)
        self.idle.enter()
        try:
            if self._model is None:
                self.load()
            vectors = self._model.embed([t[:EMBED_CHARS] for t in texts], norm=True)
        finally:
            self.idle.leave()
        return np.asarray(vectors, dtype=np.float32).reshape(len(texts), self._dim)
