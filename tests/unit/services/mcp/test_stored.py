"""How the MCP configuration is kept: a chat's switches in a stable shape, a server's tool
listing read back as it was stored, and its secrets read from the key store only when the
server names some (anything unreadable there is no secret, not a crash)."""

from __future__ import annotations

from keyring.backends import fail

from treechat.providers.keys import KeyStore
from treechat.services.mcp.stored import (
    KEYRING_PREFIX,
    ChatSwitches,
    chat_key,
    read_secrets,
    tool_from_stored,
    tool_to_stored,
)
from treechat.tools.mcp.runtime import ToolInfo


def test_a_chats_switches_are_kept_sorted_under_its_own_key() -> None:
    switches = ChatSwitches(servers={"web": False, "files": True}, always={"web/get", "a/b"})
    assert switches.stored() == {"servers": {"files": True, "web": False},
                                 "always": ["a/b", "web/get"]}
    assert chat_key("s1") == "mcp.chat:s1" != chat_key("s2")


def test_a_listed_tool_reads_back_as_it_was_stored() -> None:
    schema = {"type": "object", "properties": {"q": {"type": "string"}}}
    tool = ToolInfo("search", "Find things", schema, None)
    back = tool_from_stored(tool_to_stored(tool))
    assert (back.name, back.description, dict(back.input_schema)) == (
        "search", "Find things", schema)
    assert back.problem is None
    odd = tool_from_stored({"name": "arr", "input_schema": {"type": "array"}})
    assert odd.problem  # a schema a provider would refuse is named, not offered


def test_secrets_are_read_only_for_a_server_that_names_them() -> None:
    keys = KeyStore(backend=fail.Keyring(), environ={})
    keys.set_key(KEYRING_PREFIX + "web", '{"env": {"TOKEN": "t-1"}, "headers": {}}')
    keys.set_key(KEYRING_PREFIX + "broken", "not json")
    assert read_secrets(keys, "web", {"env_names": ["TOKEN"]}) == {
        "env": {"TOKEN": "t-1"}, "headers": {}}
    assert read_secrets(keys, "web", {}) is None  # names none: the keyring is not read
    assert read_secrets(keys, "broken", {"header_names": ["X"]}) is None
    assert read_secrets(keys, "absent", {"env_names": ["A"]}) is None


def test_a_listed_tools_verdict_is_kept_with_it() -> None:
    """Read back as it was judged when listed (no validator runs on the way back); a listing
    kept before verdicts were is judged as it is read."""
    refused = ToolInfo("arr", "", {"type": "array"}, "its input schema's top level is 'array'")
    assert tool_from_stored(tool_to_stored(refused)).problem == refused.problem
    fine = ToolInfo("ok", "", {"type": "object"}, None)
    assert tool_from_stored(tool_to_stored(fine)).problem is None
    assert tool_from_stored({"name": "arr", "input_schema": {"type": "array"}}).problem
    assert tool_from_stored({"name": "x", "input_schema": ["x"], "problem": None}).problem
