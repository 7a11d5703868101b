"""The window's asyncio loop: coroutines run on it with Qt's events, and closing it cancels
what is left (a `finally` still runs) and puts the interpreter's hooks back."""

from __future__ import annotations

import asyncio
import sys

from PySide6.QtWidgets import QApplication

from treechat.ui.shell.event_loop import close_event_loop, create_event_loop


def test_closing_the_loop_cancels_what_is_left_and_restores_the_hooks(
    qapp: QApplication,
) -> None:
    hooks = sys.get_asyncgen_hooks()
    loop = create_event_loop(qapp)
    cleaned: list[str] = []

    async def waits() -> None:
        try:
            await asyncio.sleep(3600)
        finally:
            cleaned.append("finally ran")

    async def answer() -> int:
        await asyncio.sleep(0)
        return 42

    assert asyncio.get_event_loop() is loop
    task = loop.create_task(waits())
    assert loop.run_until_complete(answer()) == 42
    close_event_loop(loop)
    assert task.cancelled() and cleaned == ["finally ran"]
    assert loop.is_closed()
    assert sys.get_asyncgen_hooks() == hooks


def test_while_the_loop_runs_a_worker_hands_the_interpreter_back_within_a_millisecond(
    qapp: QApplication,
) -> None:
    before = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # CPython's default
    try:
        loop = create_event_loop(qapp)
        assert sys.getswitchinterval() <= 0.0002
        close_event_loop(loop)
        assert sys.getswitchinterval() == 0.005  # put back with the rest
    finally:
        sys.setswitchinterval(before)
