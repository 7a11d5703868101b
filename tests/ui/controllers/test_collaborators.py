"""The narrow collaborators the store-facing controllers are typed against are what the real
conversation controller offers: every member of each protocol is there, the coroutines are
coroutines, and the model picker's settable members can be set."""

from __future__ import annotations

import inspect
from typing import Any

from treechat.ui.controllers import collaborators as co

from ..conftest import Desk


def members(protocol: type[Any]) -> set[str]:
    names = {n for klass in protocol.__mro__ if klass.__module__ == co.__name__
             for n in (*vars(klass), *getattr(klass, "__annotations__", {}))}
    return {n for n in names if not n.startswith("_")}


def test_the_conversation_controller_is_a_restore_host(desk: Desk) -> None:
    c = desk.controller
    wanted = members(co.RestoreHost)
    assert wanted >= {"current_session_id", "session_list", "load_session", "turns", "start"}
    assert all(hasattr(c, name) for name in wanted)
    for coroutine in (c.load_session, c.start, c.turns.stop_all, c.tasks.cancel_all,
                      c.session_list.reload, c.sessions.list):
        assert inspect.iscoroutinefunction(coroutine), coroutine


def test_the_model_controller_is_a_model_picker(desk: Desk) -> None:
    picker = desk.controller.models
    assert all(hasattr(picker, name) for name in members(co.ModelPicker))
    assert inspect.iscoroutinefunction(picker.refresh)
    picker.next_model = "library/tiny"
    assert picker.next_model == "library/tiny"


def test_the_spawner_and_status_line_are_the_windows(desk: Desk) -> None:
    status: co.StatusLine = desk.controller.parts.status
    status("Looking well")
    assert desk.window.statusBar().currentMessage() == "Looking well"
    spawn: co.Spawner = desk.controller.spawn

    async def nothing() -> int:
        return 7

    task = spawn(nothing(), "nothing")
    assert desk.aio.run(task) == 7
