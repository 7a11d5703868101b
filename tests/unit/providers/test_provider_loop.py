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
