"""Background tasks of a window: kept until they end, a failure reported once (never a
cancellation), and everything still running cancelled when the window goes."""

from __future__ import annotations

import asyncio

from treechat.ui.common.tasks import BackgroundTasks, loop_running

from ..conftest import Aio


def test_a_task_is_kept_until_it_ends_and_its_failure_is_reported(aio: Aio) -> None:
    failures: list[BaseException] = []
    tasks = BackgroundTasks(on_error=failures.append)

    async def fails() -> None:
        await asyncio.sleep(0)
        raise ValueError("the store went away")

    async def scenario() -> None:
        assert loop_running()
        gate = asyncio.Event()
        waiting = tasks.spawn(gate.wait(), name="waits")
        tasks.spawn(fails(), name="fails")
        assert waiting.get_name() == "waits" and len(tasks) == 2
        gate.set()
        await tasks.idle()
        assert len(tasks) == 0

    aio.run(scenario())
    assert [str(e) for e in failures] == ["the store went away"]


def test_closing_cancels_what_still_runs_without_calling_it_a_failure(aio: Aio) -> None:
    failures: list[BaseException] = []
    tasks = BackgroundTasks(on_error=failures.append)

    async def scenario() -> asyncio.Task[object]:
        task = tasks.spawn(asyncio.sleep(3600))
        await asyncio.sleep(0)
        await tasks.cancel_all()
        return task

    task = aio.run(scenario())
    assert task.cancelled() and len(tasks) == 0 and failures == []


def test_no_loop_runs_outside_the_window_loop() -> None:
    assert not loop_running()
