"""The agent loop through real parts (a DuckDB file, litellm over HTTP to the loopback
server): requests run until a reply calls no tool or the step limit is reached, the session
follows the model the turn used, and the last event says what the whole turn wrote."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import LOOPBACK_MODEL, Events, loopback_services
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.services.bootstrap import Services
from treechat.services.turns.events import TurnFailed, TurnFinished, TurnStarted
from treechat.store import usage as ledger


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_the_step_limit_ends_a_turn_that_keeps_calling_tools(
    services: Services, loopback: LoopbackProvider
) -> None:
    services.chat.config.max_steps = 2
    loopback.reply_with_tool_calls([{"name": "todo_list", "arguments": {}}])
    loopback.reply_with_tool_calls([{"name": "todo_list", "arguments": {}}])
    session = await services.chat.sessions.create()
    events = Events()
    assert await services.chat.send(session.id, "loop", on_event=events) is None
    (failed,) = events.of(TurnFailed)
    assert failed.error.kind == "internal" and "2 tool steps" in failed.error.message
    assert len(loopback.requests) == 2
    changes = failed.changes
    assert changes is not None
    assert [n.role for n in changes.nodes] == ["user", "assistant", "tool", "assistant", "tool"]
    view = await services.chat.sessions.view(session.id)
    assert changes.head == view.head == changes.nodes[3].id
    rows = services.store.call(lambda r: ledger.session_usage(r, session.id))
    assert sorted(changes.usage) == sorted(row.id for row in rows) and len(rows) == 2


@pytest.mark.asyncio
async def test_the_session_follows_the_model_its_turn_used(
    services: Services, loopback: LoopbackProvider
) -> None:
    loopback.queue(Reply(text="one"), Reply(text="two"))
    session = await services.chat.sessions.create()
    events = Events()
    await services.chat.send(session.id, "hello", on_event=events)
    (started,) = events.of(TurnStarted)
    assert started.model == LOOPBACK_MODEL
    (finished,) = events.of(TurnFinished)
    assert finished.changes is not None and finished.changes.model == LOOPBACK_MODEL
    assert (await services.chat.sessions.view(session.id)).session.model == LOOPBACK_MODEL
    again = Events()
    await services.chat.send(session.id, "again", on_event=again)
    (second,) = again.of(TurnFinished)
    assert second.changes is not None and second.changes.model is None  # already on it
