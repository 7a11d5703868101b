"""The MCP service on a real DuckDB file and real servers: configurations and their secrets,
per-chat switches, the tool list a chat declares, approval, protected tools, prompts and
resources."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from tests.support.mcp_fixtures import stdio_config

from treechat.providers.keys import KeyStore
from treechat.services.mcp.approval import ApprovalRequest, Decision
from treechat.services.mcp.service import McpService
from treechat.services.mcp.stored import SETTINGS_LISTINGS, SETTINGS_SERVERS
from treechat.store.database import Store
from treechat.tools.mcp.config import ConfigError, ServerConfig


class Asker:
    """An approver that answers from a script and remembers what it was asked."""

    def __init__(self, *answers: Decision) -> None:
        self.answers = list(answers)
        self.asked: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> Decision:
        self.asked.append(request)
        return self.answers.pop(0)


def stored(store: Store, key: str) -> Any:
    return store.call(lambda r: r.get_setting(key))


@pytest.mark.asyncio
async def test_secrets_go_to_the_keystore_and_never_to_the_store(
    service: McpService, store: Store, keys: KeyStore, tmp_path: Path
) -> None:
    config = ServerConfig(
        "web", "http", url="https://x.example/mcp", headers={"Authorization": "Bearer q9z8y7"}
    )
    await service.add(config)
    assert "q9z8y7" not in json.dumps(stored(store, SETTINGS_SERVERS))
    assert "q9z8y7" in (keys.get_key("mcp:web") or "")
    again = McpService(store, keys)
    await again.ensure_loaded()
    assert again.config("web").headers == {"Authorization": "Bearer q9z8y7"}
    await again.remove("web")
    assert keys.get_key("mcp:web") is None
    assert stored(store, SETTINGS_SERVERS) == {}


@pytest.mark.asyncio
async def test_names_are_unique_and_removing_an_unknown_server_says_so(
    service: McpService,
) -> None:
    await service.add(ServerConfig("one", "stdio", command="x"))
    with pytest.raises(ConfigError, match="already exists"):
        await service.add(ServerConfig("ONE", "stdio", command="y"))
    with pytest.raises(LookupError, match="no MCP server named 'two'"):
        await service.remove("two")


@pytest.mark.asyncio
async def test_import_adds_what_works_and_reports_the_rest(service: McpService) -> None:
    await service.add(ServerConfig("taken", "stdio", command="x"))
    text = json.dumps(
        {
            "mcpServers": {
                "time": {"command": "uvx", "args": ["mcp-server-time"]},
                "taken": {"command": "y"},
                "broken": {"url": "nope"},
            }
        }
    )
    result = await service.import_json(text)
    assert [c.name for c in result.servers] == ["time"]
    assert any("taken" in p and "already exists" in p for p in result.problems)
    assert any(p.startswith("broken:") for p in result.problems)
    assert [c.name for c in service.configs()] == ["taken", "time"]


@pytest.mark.asyncio
async def test_per_chat_switches_override_the_global_one(service: McpService) -> None:
    await service.add(ServerConfig("a", "stdio", command="x"))
    await service.add(ServerConfig("b", "stdio", command="x", enabled=False))
    await service.load_chat("s1")
    assert [c.name for c in service.enabled_in("s1")] == ["a"]
    await service.set_enabled_in_chat("s1", "b", True)
    await service.set_enabled_in_chat("s1", "a", False)
    assert [c.name for c in service.enabled_in("s1")] == ["b"]
    await service.load_chat("s2")
    assert [c.name for c in service.enabled_in("s2")] == ["a"]
    await service.set_enabled_in_chat("s1", "a", None)
    assert [c.name for c in service.enabled_in("s1")] == ["a", "b"]


@pytest.mark.asyncio
async def test_a_chat_declares_every_tool_up_front_namespaced_and_stable(
    service: McpService, store: Store
) -> None:
    await service.add(stdio_config("alpha", "A"))
    await service.add(stdio_config("beta", "B"))
    states = await service.prepare("chat")
    assert {n: s.status for n, s in states.items()} == {"alpha": "ready", "beta": "ready"}
    names = [t.name for t in service.tools_for("chat", taken=["todo_list"])]
    assert names == sorted(names)
    assert "alpha__secret_value" in names and "beta__secret_value" in names
    # The listing is remembered, so the next process declares the same tools before the
    # servers are up: the tool list (and the cached prefix) does not churn.
    assert set(stored(store, SETTINGS_LISTINGS)) == {"alpha", "beta"}
    later = McpService(store, service.keys)
    await later.load_chat("chat")
    assert [t.name for t in later.tools_for("chat", taken=["todo_list"])] == names
    specs = [(t.name, t.description, t.parameters) for t in later.tools_for("chat")]
    assert specs == [(t.name, t.description, t.parameters) for t in service.tools_for("chat")]
    await later.close()


@pytest.mark.asyncio
async def test_a_schema_a_provider_would_refuse_is_reported_not_offered(
    service: McpService, store: Store
) -> None:
    await service.add(ServerConfig("odd", "stdio", command="x"))
    listing = {
        "odd": [
            {"name": "fine", "description": "", "input_schema": {"type": "object"}},
            {"name": "arr", "description": "", "input_schema": {"type": "array"}},
        ]
    }
    store.call(lambda r: r.set_setting(SETTINGS_LISTINGS, listing))
    fresh = McpService(store, service.keys)
    await fresh.load_chat("c")
    assert [t.name for t in fresh.tools_for("c")] == ["odd__fine"]
    (rejected,) = fresh.rejected_tools()
    assert (rejected.server, rejected.tool) == ("odd", "arr")
    assert "not an object" in rejected.problem


@pytest.mark.asyncio
async def test_a_failed_server_reports_through_the_tool_not_a_crash(
    service: McpService,
) -> None:
    await service.add(ServerConfig("ghost", "stdio", command="no-such-mcp-cmd", policy="allow"))
    states = await service.prepare("c")
    assert states["ghost"].status == "failed"
    assert service.tools_for("c") == []  # never listed, nothing declared


@pytest.mark.asyncio
async def test_protected_tools_are_named_for_the_rules(store: Store, keys: KeyStore) -> None:
    seen: list[frozenset[str]] = []
    service = McpService(store, keys, on_protected=seen.append)
    try:
        await service.add(stdio_config("alpha", "s"))
        await service.prepare("c")
        await service.set_protected("alpha", "secret_value", True)
        assert seen[-1] == frozenset({"alpha__secret_value"})
        assert service.protected() == [("alpha", "secret_value")]
        await service.set_protected("alpha", "secret_value", False)
        assert seen[-1] == frozenset()
    finally:
        await service.close()


@pytest.mark.asyncio
async def test_prompts_are_slash_commands_and_resources_attachable(
    service: McpService,
) -> None:
    await service.add(stdio_config("alpha", "s"))
    (command,) = await service.prompt_commands("c")
    assert command.command == "/alpha:review"
    assert command.prompt.arguments[0].required
    with pytest.raises(ConfigError, match="needs topic"):
        await service.expand_prompt("c", "/alpha:review")
    text = await service.expand_prompt("c", "/alpha:review", {"topic": "chapter 2"})
    assert text == "Please review chapter 2 carefully (alpha)."
    with pytest.raises(LookupError):
        await service.expand_prompt("c", "/nobody:review")
    ((server, info),) = await service.resources("c")
    assert (server, info.uri) == ("alpha", "note://readme")
    resource = await service.read_resource("alpha", "note://readme")
    assert resource.text == "The alpha server's readme." and resource.label == "alpha: readme"
    block = resource.as_message_block()
    assert block.startswith("[Resource alpha: readme (note://readme)")
    assert "```\nThe alpha server's readme.\n```" in block


@pytest.mark.asyncio
async def test_states_reach_subscribers_on_their_loop(service: McpService) -> None:
    seen: list[str] = []
    service.subscribe(lambda s: seen.append(f"{s.name}:{s.status}"))
    await service.add(stdio_config("alpha", "s"))
    await service.start("alpha")
    await asyncio.sleep(0.1)
    assert seen[:2] == ["alpha:starting", "alpha:ready"]
    await service.restart("alpha")
    await asyncio.sleep(0.1)
    assert seen[-3:] == ["alpha:stopped", "alpha:starting", "alpha:ready"]


@pytest.mark.asyncio
async def test_a_command_line_turn_lets_go_of_the_store_while_servers_start_and_it_asks(
    service: McpService, store: Store
) -> None:
    """Starting a server and listing its tools, and asking a person about a call, are waits
    on a peer or a person: with `release_store` the store is free meanwhile, and back after."""
    from treechat.services.store_life.drafts import StoreRelease
    from treechat.services.turns.sessions import SessionService

    session = (await SessionService(store).create("Tools")).id
    await service.add(stdio_config("alpha", "alpha-secret-31"))
    service.release_store = StoreRelease()
    while_starting: list[bool] = []
    service.subscribe(lambda s: while_starting.append(store.released)
                      if s.status == "starting" else None)
    await service.prepare(session)
    await asyncio.sleep(0.1)
    assert while_starting == [True] and not store.released

    class Watching(Asker):
        async def __call__(self, request: ApprovalRequest) -> Decision:
            self.released = store.released
            return await super().__call__(request)

    asker = Watching(Decision.ALLOW_ONCE)
    service.set_approver(asker)
    (tool,) = [t for t in service.tools_for(session) if t.name == "alpha__secret_value"]
    assert (await tool.call({})).text == "alpha-secret-31"
    assert asker.released and not store.released


@pytest.mark.asyncio
async def test_a_command_line_turn_starts_a_listed_server_only_when_its_tool_is_called(
    service: McpService, store: Store
) -> None:
    """Without `start_listed_servers` (`treechat send`), a server never listed is listed once
    before the turn; one already listed is offered from its listing and started by the
    first call of one of its tools, the store let go of while it starts."""
    from treechat.services.store_life.drafts import StoreRelease
    from treechat.services.turns.sessions import SessionService

    session = (await SessionService(store).create("Tools")).id
    service.start_listed_servers = False
    await service.add(stdio_config("alpha", "alpha-secret-40", policy="allow"))
    assert (await service.prepare(session))["alpha"].status == "ready"  # never listed
    later = McpService(store, service.keys)
    later.start_listed_servers = False
    later.release_store = StoreRelease()
    starting: list[bool] = []
    later.subscribe(lambda s: starting.append(store.released) if s.status == "starting" else None)
    try:
        assert (await later.prepare(session))["alpha"].status == "stopped"
        (tool,) = [t for t in later.tools_for(session) if t.name == "alpha__secret_value"]
        assert later.state("alpha").status == "stopped"
        result = await tool.call({})
        assert (result.ok, result.text) == (True, "alpha-secret-40")
        await asyncio.sleep(0.1)
        assert starting == [True] and not store.released
    finally:
        await later.close()


@pytest.mark.asyncio
async def test_a_tool_the_server_no_longer_lists_is_a_clear_error_and_the_list_is_refreshed(
    service: McpService, store: Store
) -> None:
    """A chat declared a tool from an older listing: calling it starts the server, says the
    tool is gone and what the server lists now, asks no one, and the listing kept is the
    server's current one."""
    await service.add(stdio_config("alpha", "s"))  # every call is asked about
    retired = {"name": "retired", "description": "Gone in the server's new version",
               "input_schema": {"type": "object"}, "problem": None}
    store.call(lambda r: r.set_setting(SETTINGS_LISTINGS, {"alpha": [retired]}))
    fresh = McpService(store, service.keys)
    fresh.start_listed_servers = False
    asker = Asker()
    fresh.set_approver(asker)
    try:
        await fresh.prepare("c")
        (tool,) = fresh.tools_for("c")
        assert tool.name == "alpha__retired"
        result = await tool.call({})
        assert not result.ok
        assert "the alpha server no longer has a tool named 'retired', so nothing ran" \
            in result.text
        assert "secret_value" in result.text  # what it lists now
        assert asker.asked == []
        kept = [t["name"] for t in stored(store, SETTINGS_LISTINGS)["alpha"]]
        assert "retired" not in kept and "secret_value" in kept
        assert "alpha__secret_value" in [t.name for t in fresh.tools_for("c")]
    finally:
        await fresh.close()


@pytest.mark.asyncio
async def test_pointing_a_server_elsewhere_forgets_what_it_listed(
    service: McpService, store: Store
) -> None:
    """A new command, URL or secret may be another server: it is listed afresh before a
    chat offers its tools. A new default answer is the same server."""
    await service.add(stdio_config("alpha", "s"))
    await service.prepare("c")
    await service.set_policy("alpha", "allow")
    assert set(stored(store, SETTINGS_LISTINGS)) == {"alpha"}
    await service.add(stdio_config("alpha", "s", "--garbage"), replace_existing=True)
    assert stored(store, SETTINGS_LISTINGS) == {}
    assert service.tools_for("c") == []
