"""Operations on the graph from the chat view: switching versions (Alt+←/→ too), pinning
and branching into a new chat. HEAD moves and the window follows; nothing is sent."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.store.database import Store

from ..conftest import MODEL, Aio, Desk, Seed


def two_answers(store: Store) -> None:
    """One question answered twice; HEAD on the second answer."""
    store.call(lambda r: r.create_session(Session("v", "Versions", None, MODEL, 1.0,
                                                  updated_at=1.0)))
    ask = Node("q", 0, 1.0, "v", "user", output="Name a colour")
    first = Node("a1", 1, 2.0, "v", "assistant", output="Blue", predecessor="q")
    second = Node("a2", 2, 3.0, "v", "assistant", output="Green", predecessor="q")
    store.call(lambda r: r.apply_change("v", Change((ask, first, second), "a2"), 3.0))


def texts(desk: Desk) -> list[str]:
    return [r.text for r in desk.chat.model.rows if r.node_id]


def test_stepping_through_versions_moves_head_and_sends_nothing(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_answers)
    controller = desk.controller
    requests = desk.requests()

    async def scenario() -> None:
        await controller.load_session("v")
        assert texts(desk) == ["Name a colour", "Green"]
        controller.graph_ops.step_version(-1)
        await aio.until(lambda: texts(desk) == ["Name a colour", "Blue"], what="version 1")
        controller.graph_ops.step_version(-1)  # there is no version 0: nothing happens
        await controller.tasks.idle()
        assert controller.current_view is not None and controller.current_view.head == "a1"
        desk.chat.versionRequested.emit("a1", 2)  # the row's `>` button
        await aio.until(lambda: texts(desk) == ["Name a colour", "Green"], what="version 2")
        await controller.tasks.idle()

    aio.run(scenario())
    stored = desk.services.store.call(lambda r: r.get_session("v"))
    assert stored is not None and stored.head == "a2"
    assert desk.requests() == requests


def test_a_version_switch_is_drawn_from_the_graph_on_screen_without_reading_the_chat(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, monkeypatch: pytest.MonkeyPatch
) -> None:
    desk = desk_with(two_answers)
    controller = desk.controller
    sessions = desk.services.chat.sessions
    load = sessions.view
    loads: list[str] = []

    async def counted(session_id: str) -> SessionView:  # the service's own, counted
        loads.append(session_id)
        return await load(session_id)

    async def scenario() -> None:
        await controller.load_session("v")
        await controller.tasks.idle()
        monkeypatch.setattr(sessions, "view", counted)
        controller.graph_ops.step_version(-1)
        await aio.until(lambda: texts(desk) == ["Name a colour", "Blue"], what="version 1")
        await controller.tasks.idle()

    aio.run(scenario())
    assert loads == []
    shown = controller.current_view
    stored = aio.run(load("v"))
    assert shown is not None and shown.session == stored.session
    assert shown.path == stored.path and shown.head == "a1"
    assert desk.chat.model.rows[-1].version == (1, 2)


def test_a_pinned_message_is_marked_and_a_branch_opens_as_a_new_chat(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_answers)
    controller = desk.controller

    async def scenario() -> None:
        await controller.load_session("v")
        desk.chat.pinRequested.emit("q", True)
        await aio.until(lambda: controller.current_view is not None
                        and "q" in controller.current_view.pinned, what="the pin")
        row = next(r for r in desk.chat.model.rows if r.node_id == "q")
        assert row.pinned
        desk.chat.branchRequested.emit("a2")
        await aio.until(lambda: controller.current_session_id not in (None, "v"),
                        what="the branch opened")
        await controller.tasks.idle()

    aio.run(scenario())
    assert "Branched into" in desk.window.statusBar().currentMessage()
    assert texts(desk) == ["Name a colour", "Green"]
    assert desk.window.sessions.session(controller.current_session_id or "") is not None
