"""A resource quoted into a message: named, and fenced so its own backticks cannot end the
quote early."""

from __future__ import annotations

from treechat.services.mcp.prompts_and_resources import ResourceText


def test_a_resource_is_named_and_fenced() -> None:
    block = ResourceText("notes", "note://a", "notes: a", "plain text\n").as_message_block()
    assert block == ("[Resource notes: a (note://a), quoted from the notes MCP server]\n"
                     "```\nplain text\n```")


def test_a_fence_inside_the_resource_gets_a_longer_fence_around_it() -> None:
    text = "before\n````python\nx = 1\n````\nafter"
    block = ResourceText("docs", "doc://x", "docs: x", text).as_message_block()
    lines = block.splitlines()
    assert lines[1] == "`````" and lines[-1] == "`````"
    assert "\n".join(lines[2:-1]) == text
