"""The transport's thread: one background event loop, living as long as the process, where
every provider call is made so litellm's per-chunk Python never lags the GUI's loop."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import sys
import threading

from . import llm

SWITCH_INTERVAL = 0.0002
"""GIL switch interval while the provider thread runs (CPython's default is 5 ms)."""
WORKER_THREADS = 1
"""Worker threads the provider loop runs blocking calls on, at once."""


class _ProviderLoop:
    """A background thread running its own event loop, where every provider call is made.

    litellm and the SDK under it spend a few milliseconds of Python per streamed chunk and
    more at the end of a stream; on the GUI's loop that is visible lag. Here the GIL is
    handed back every switch interval, so the GUI's loop stays responsive. litellm caches
    HTTP clients per loop, and this loop lives as long as the process.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._loop.is_closed():
                # While this thread parses a stream, the GUI thread waits for the GIL up to
                # one switch interval per wake-up; 5 ms of that is visible as lag.
                sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
                loop = asyncio.new_event_loop()
                ready = threading.Event()

                def run() -> None:
                    asyncio.set_event_loop(loop)
                    loop.run_until_complete(_one_worker_thread())
                    loop.call_soon(ready.set)
                    loop.run_forever()

                self._thread = threading.Thread(
                    target=run, name="treechat-provider-loop", daemon=True
                )
                self._thread.start()
                ready.wait()
                self._loop = loop
                atexit.register(self.shutdown)
            return self._loop

    def shutdown(self, timeout: float = 10.0) -> None:
        """Close litellm's HTTP clients on the loop, then stop and close it."""
        with self._lock:
            loop, thread = self._loop, self._thread
            self._loop = self._thread = None
        if loop is None or thread is None:
            return
        done = asyncio.run_coroutine_threadsafe(llm.aclose_clients(), loop)
        with contextlib.suppress(Exception):
            done.result(timeout)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout)
        if not thread.is_alive():
            loop.close()


async def _one_worker_thread() -> None:
    """litellm assembles each finished stream whole again, in pure Python, on a worker
    thread of this loop (anyio's, 40 at most): three replies ending together were three
    threads and the GUI thread taking turns at the GIL, which it then got one time in four.
    One at a time, the GUI thread shares it with one."""
    import anyio.to_thread  # httpx's dependency, imported with litellm already

    anyio.to_thread.current_default_thread_limiter().total_tokens = WORKER_THREADS


provider_loop = _ProviderLoop()


def shutdown_provider_loop() -> None:
    """Close provider connections and stop the provider thread (at application exit). A later
    call starts a fresh one."""
    provider_loop.shutdown()
