"""Coroutines the window starts and does not await: kept strongly referenced (so none is
garbage-collected mid-flight), failures logged, all cancelled together at shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine
from typing import Any

log = logging.getLogger(__name__)


def loop_running() -> bool:
    """Whether the window's asyncio loop runs now. A Qt timer can fire while it does not (the
    window closing, or after it closed): its slot then has nothing to start a task on."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class BackgroundTasks:
    def __init__(self, on_error: Callable[[BaseException], None] | None = None) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._on_error = on_error

    def spawn(self, coro: Coroutine[Any, Any, Any], name: str | None = None) -> asyncio.Task[Any]:
        task = asyncio.ensure_future(coro)
        if name:
            task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return task

    def _done(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("background task %s failed", task.get_name(), exc_info=exc)
            if self._on_error is not None:
                self._on_error(exc)

    def __len__(self) -> int:
        return len(self._tasks)

    async def idle(self) -> None:
        """Wait until every task started so far (and any they start) has finished."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def cancel_all(self) -> None:
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.gather(*tasks, return_exceptions=True)
