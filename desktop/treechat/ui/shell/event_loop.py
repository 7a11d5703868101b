"""The one asyncio loop, running on Qt's: qasync's QEventLoop plus what asyncio's own
`run_forever` would have set up and qasync does not (finalizing abandoned async generators
on the loop, as asyncio does, instead of in whatever thread the garbage collector runs), a
short interpreter switch interval while it runs, and the cycle collector on its thread."""

from __future__ import annotations

import asyncio
import sys
import weakref
from typing import Any

import qasync
from PySide6.QtWidgets import QApplication

from .collector import GuiThreadCollector
from .import_hook import tolerate_lazy_modules

# the hooks each loop replaced, put back when it closes
_OLD_HOOKS: weakref.WeakKeyDictionary[qasync.QEventLoop, Any] = weakref.WeakKeyDictionary()
_OLD_SWITCH: weakref.WeakKeyDictionary[qasync.QEventLoop, float] = weakref.WeakKeyDictionary()
_COLLECTORS: weakref.WeakKeyDictionary[qasync.QEventLoop, GuiThreadCollector] = (
    weakref.WeakKeyDictionary())

SWITCH_INTERVAL = 0.0002
"""Seconds another thread may hold the interpreter lock once the GUI thread asks for it
(CPython's default is 5 ms). The GUI thread asks at every step between Qt and Python, many
times a frame, and may wait this long each time while a worker runs Python (the provider's
thread parsing three streams): at 1 ms a frame's steps added up to 26-35 ms stalls with three
replies streaming, at 0.2 ms 15 ms. A worker's switches cost it nothing measurable here."""


def create_event_loop(app: QApplication) -> qasync.QEventLoop:
    tolerate_lazy_modules()  # before anything on this loop starts litellm's import
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    _OLD_HOOKS[loop] = sys.get_asyncgen_hooks()
    _OLD_SWITCH[loop] = sys.getswitchinterval()
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL))
    _COLLECTORS[loop] = GuiThreadCollector(app)  # cycles are freed on this thread only
    # BaseEventLoop's own hooks: an async generator dropped half-way is closed by a task on
    # this loop, so its `finally` can still await.
    sys.set_asyncgen_hooks(
        firstiter=loop._asyncgen_firstiter_hook,
        finalizer=loop._asyncgen_finalizer_hook,
    )
    return loop


def close_event_loop(loop: qasync.QEventLoop) -> None:
    """Cancel what is left, finalize async generators, close, and unset the loop."""
    pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    loop.run_until_complete(loop.shutdown_asyncgens())
    old = _OLD_HOOKS.pop(loop, None)
    if old is not None:
        sys.set_asyncgen_hooks(*old)
    switch = _OLD_SWITCH.pop(loop, None)
    if switch is not None:
        sys.setswitchinterval(switch)
    collector = _COLLECTORS.pop(loop, None)
    if collector is not None:
        collector.stop()
        collector.deleteLater()
    loop.close()
    asyncio.set_event_loop(None)
