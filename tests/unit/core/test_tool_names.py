"""A tool's name as a person reads it: an MCP server's tool as "tool (server)", a built-in
tool as it is."""

from __future__ import annotations

import pytest

from treechat.core.tool_names import shown_tool_name
from treechat.tools.mcp.naming import public_name


@pytest.mark.parametrize(("called", "shown"), [
    ("alpha__add", "add (alpha)"),
    ("files__read__part", "read__part (files)"),
    ("recall", "recall"),
    ("__odd", "__odd"),
    ("", "tool"),
])
def test_called_names_read_as_a_person_says_them(called: str, shown: str) -> None:
    assert shown_tool_name(called) == shown


def test_the_name_a_server_tool_is_called_by_reads_back() -> None:
    assert shown_tool_name(public_name("weather", "forecast")) == "forecast (weather)"
