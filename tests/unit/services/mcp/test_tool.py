"""A chat's MCP tool against a real server on a real DuckDB file: it asks first, runs only
once allowed, answers a denial in words, remembers "always" for its chat, and runs nothing
while the question is open."""

from __future__ import annotations

import asyncio

import pytest
from tests.support.mcp_fixtures import stdio_config
from tests.unit.services.mcp.test_service import Asker, stored

from treechat.services.mcp.approval import ApprovalRequest, Decision
from treechat.services.mcp.service import McpService
from treechat.services.mcp.stored import chat_key
from treechat.store.database import Store


@pytest.mark.asyncio
async def test_approval_allow_once_deny_and_always(service: McpService, store: Store) -> None:
    await service.add(stdio_config("alpha", "alpha-secret-31"))
    await service.prepare("chat")
    (tool,) = [t for t in service.tools_for("chat") if t.name == "alpha__secret_value"]
    asker = Asker(Decision.ALLOW_ONCE, Decision.DENY, Decision.ALLOW_ALWAYS)
    service.set_approver(asker)

    first = await tool.call({})
    assert (first.ok, first.text) == (True, "alpha-secret-31")
    assert first.metadata == {"mcp": {"server": "alpha", "tool": "secret_value"}}
    denied = await tool.call({})
    assert denied.ok is False and "denied" in denied.text and "secret_value" in denied.text
    assert (await tool.call({})).text == "alpha-secret-31"  # always, from now on
    assert (await tool.call({})).text == "alpha-secret-31"
    assert len(asker.asked) == 3
    assert (asker.asked[0].server, asker.asked[0].tool) == ("alpha", "secret_value")
    assert stored(store, chat_key("chat"))["always"] == ["alpha/secret_value"]
    # Another chat is asked again.
    await service.prepare("other")
    (other,) = [t for t in service.tools_for("other") if t.name == "alpha__secret_value"]
    service.set_approver(Asker(Decision.DENY))
    assert (await other.call({})).ok is False


@pytest.mark.asyncio
async def test_server_defaults_deny_and_allow_and_nobody_to_ask(service: McpService) -> None:
    await service.add(stdio_config("alpha", "s", policy="deny"))
    await service.prepare("c")
    (tool,) = [t for t in service.tools_for("c") if t.name == "alpha__secret_value"]
    asker = Asker()
    service.set_approver(asker)
    assert (await tool.call({})).ok is False
    await service.set_policy("alpha", "allow")
    await service.prepare("c")
    (tool,) = [t for t in service.tools_for("c") if t.name == "alpha__secret_value"]
    assert (await tool.call({})).text == "s"
    assert asker.asked == []
    await service.set_policy("alpha", "ask")
    service.set_approver(None)
    await service.prepare("c")
    (tool,) = [t for t in service.tools_for("c") if t.name == "alpha__secret_value"]
    assert "denied" in (await tool.call({})).text


@pytest.mark.asyncio
async def test_nothing_runs_while_approval_is_pending_and_cancel_cancels(
    service: McpService,
) -> None:
    await service.add(stdio_config("alpha", "s"))
    await service.prepare("c")
    (tool,) = [t for t in service.tools_for("c") if t.name == "alpha__whoami"]
    asked = asyncio.Event()
    never = asyncio.get_running_loop().create_future()

    async def slow_user(request: ApprovalRequest) -> Decision:
        asked.set()
        return await never

    service.set_approver(slow_user)
    call = asyncio.ensure_future(tool.call({}))
    await asked.wait()
    await asyncio.sleep(0.3)
    assert not call.done()
    call.cancel()
    with pytest.raises(asyncio.CancelledError):
        await call
    assert never.cancelled()
