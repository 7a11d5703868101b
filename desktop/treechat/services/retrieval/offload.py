"""The heavy half of indexing, in a child process of low priority: reading and cutting files
and embedding passages with the offline models. On a thread of the window's process this work
competes with the window twice over: for the interpreter (tokenizing, cutting and numpy's
smaller steps hold the GIL) and for a core at the same priority, and on a busy machine of two
cores the window then misses frames for hundreds of milliseconds. A child process has an
interpreter of its own, and its lower priority lets the window's thread run first whenever
both want a core.

Only the process's offline models run there, loaded by name (another embedder, a server's for
example, is called on the caller's thread as before). The child starts on first use and stops
after `IDLE_SECONDS` without work, so the models' memory is not held twice while nothing is
indexed. If it dies the work is done in this process instead, and the next job starts a fresh
child: the index never loses a passage to a crash of its helper.

Thread-safe: jobs are submitted from worker threads and waited for there, never on the event
loop.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from ...providers.embeddings import Embedder
from .extract import ExtractError, file_passages

if TYPE_CHECKING:
    # numpy and the passage units come with the first file read: a send, which only asks
    # which bases its chat uses, builds the knowledge service without loading them
    import numpy as np

log = logging.getLogger(__name__)
T = TypeVar("T")
Stage = Literal["quick", "fine"]

NICENESS = 10  # a CPU-bound process at nice 10 gets about a tenth of a core beside one at 0
IDLE_SECONDS = 30.0


@dataclass(frozen=True, slots=True)
class FileRead:
    """One file read, cut and embedded: its passages (page, line, text) and their units'
    vectors under keys `passage number * UNITS_PER_PASSAGE + unit`, the passage number counted
    in the file; or why it could not be read."""

    path: str
    passages: list[tuple[int, int, str]]
    keys: list[int]
    vectors: np.ndarray[Any, Any]
    error: str = ""


def _model(stage: Stage) -> Embedder:
    from .engine import default_embedder, fine_embedder

    return default_embedder() if stage == "quick" else fine_embedder()


def embed_rows(stage: Stage, rows: Sequence[tuple[int, str]]) -> tuple[list[int], Any]:
    """The units' keys and vectors of (row id, passage text) pairs, by the process's offline
    model of this stage."""
    from .units import embed_passages

    return embed_passages(_model(stage), rows)


def read_files(paths: Sequence[str], model: Embedder | None = None) -> list[FileRead]:
    """Each file's passages and their vectors by `model` (None: the process's offline quick
    model), see `FileRead`."""
    import numpy as np

    from .units import embed_passages

    out: list[FileRead] = []
    if model is None:
        model = _model("quick")
    for path in paths:
        try:
            passages = file_passages(Path(path))
        except (OSError, ExtractError) as exc:
            out.append(FileRead(path, [], [], np.zeros((0, model.ndim), np.float32),
                                str(exc)))
            continue
        keys, vectors = embed_passages(model, [(k, t) for k, (_, _, t) in enumerate(passages)])
        out.append(FileRead(path, passages, keys, vectors))
    return out


def _start_child() -> None:
    """Runs first in the child: a low priority (POSIX; Windows keeps the default class)."""
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):  # a sandbox that refuses it: normal priority
            os.nice(NICENESS)


class Offload:
    """One child process for heavy work, started when first needed and stopped when idle."""

    def __init__(self, idle_seconds: float = IDLE_SECONDS) -> None:
        self.idle_seconds = idle_seconds
        self._lock = threading.Lock()
        self._pool: ProcessPoolExecutor | None = None
        self._running = 0
        self._idle_timer: threading.Timer | None = None

    @property
    def started(self) -> bool:
        with self._lock:
            return self._pool is not None

    def run(self, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)` in the child, waited for (call it from a worker thread). `fn` must be a
        module-level function of this package; if the child dies, it runs here."""
        with self._lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
                self._idle_timer = None
            if self._pool is None:
                # spawn: a fork of a process with Qt's and the store's threads is unsafe
                context = multiprocessing.get_context("spawn")
                self._pool = ProcessPoolExecutor(1, mp_context=context,
                                                 initializer=_start_child)
            pool = self._pool
            self._running += 1
        try:
            return pool.submit(fn, *args).result()
        except BrokenProcessPool:
            log.warning("the indexing process ended unexpectedly; indexing here instead")
            with self._lock:
                if self._pool is pool:
                    self._pool = None
            pool.shutdown(wait=False, cancel_futures=True)
            return fn(*args)
        finally:
            with self._lock:
                self._running -= 1
                if self._running == 0 and self._pool is not None:
                    self._idle_timer = threading.Timer(self.idle_seconds, self._stop_if_idle)
                    self._idle_timer.daemon = True
                    self._idle_timer.start()

    def _stop_if_idle(self) -> None:
        with self._lock:
            if self._running or self._pool is None:
                return
            pool, self._pool, self._idle_timer = self._pool, None, None
        pool.shutdown(wait=True)

    def close(self) -> None:
        """Stop the child now (jobs still queued are cancelled)."""
        with self._lock:
            if self._idle_timer is not None:
                self._idle_timer.cancel()
            pool, self._pool, self._idle_timer = self._pool, None, None
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


_SHARED: Offload | None = None
_SHARED_LOCK = threading.Lock()


def shared_offload() -> Offload:
    """The process's one indexing child (the machine may have two cores: one child at most)."""
    global _SHARED
    with _SHARED_LOCK:
        if _SHARED is None:
            _SHARED = Offload()
        return _SHARED
