"""The provider thread: one event loop on a thread of its own, the same for every call until it
is shut down, and a fresh one after."""

from __future__ import annotations

import asyncio
import threading

from treechat.providers.provider_loop import _ProviderLoop


def test_calls_run_on_one_loop_off_the_callers_thread_until_shutdown() -> None:
    loops = _ProviderLoop()
    loop = loops.get()
    assert loops.get() is loop and loop.is_running()

    async def where() -> str:
        return threading.current_thread().name

    ran_on = asyncio.run_coroutine_threadsafe(where(), loop).result(10)
    assert ran_on == "treechat-provider-loop" != threading.current_thread().name
    loops.shutdown()
    assert loop.is_closed()
    fresh = loops.get()
    assert fresh is not loop and fresh.is_running()
    loops.shutdown()
    loops.shutdown()  # twice is harmless


def test_blocking_calls_on_the_provider_loop_run_one_at_a_time() -> None:
    """litellm assembles each finished stream again on a worker thread of this loop: three
    streams ending together take turns, not three threads at once beside the GUI's."""
    import anyio.to_thread

    loops = _ProviderLoop()
    loop = loops.get()
    busy: list[int] = []
    most: list[int] = [0]
    lock = threading.Lock()

    def work() -> None:
        with lock:
            busy.append(1)
            most[0] = max(most[0], len(busy))
        threading.Event().wait(0.05)
        with lock:
            busy.pop()

    async def three() -> None:
        await asyncio.gather(*(anyio.to_thread.run_sync(work) for _ in range(3)))

    try:
        asyncio.run_coroutine_threadsafe(three(), loop).result(30)
    finally:
        loops.shutdown()
    assert most[0] == 1
