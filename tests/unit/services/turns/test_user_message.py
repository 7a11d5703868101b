"""The typed message committed before its turn: nothing empty is sent, staged attaches are
written before it, and the first message titles the chat."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.chat import loopback_services
from tests.support.loopback_server import LoopbackProvider

from treechat.services.bootstrap import Services
from treechat.services.turns.user_message import Attachment


@pytest_asyncio.fixture
async def services(tmp_path: Path, loopback: LoopbackProvider) -> AsyncIterator[Services]:
    async with loopback_services(tmp_path, loopback) as built:
        yield built


@pytest.mark.asyncio
async def test_an_empty_message_is_refused_before_anything_is_written(
    services: Services,
) -> None:
    session = await services.chat.sessions.create()
    with pytest.raises(ValueError, match="nothing to send"):
        await services.chat.messages.writer(session.id, "   ")
    assert (await services.chat.sessions.view(session.id)).head is None


@pytest.mark.asyncio
async def test_attaches_are_written_before_the_message_under_head(services: Services) -> None:
    source = await services.chat.sessions.create()
    first = await services.chat.sessions.append_message(source.id, "the source branch")
    session = await services.chat.sessions.create()
    commit = await services.chat.messages.writer(
        session.id, "  what did it say?  ",
        [Attachment(source.id, first.id, label="Source chat")])
    head, user = await commit()
    assert head == user.id and user.output == "what did it say?"
    view = await services.chat.sessions.view(session.id)
    assert [(n.role, n.output) for n in view.path] == [
        ("runtime", "Source chat"), ("user", "what did it say?")]
    pointer = view.path[0]
    assert pointer.metadata["source_session"] == source.id
    assert pointer.metadata["source_head"] == first.id
    assert view.session.title  # the first message names the chat
