"""The chat view's rows: a tool call from an MCP server is named as people read it, "add
(alpha)", not by the name the model called (`alpha__add`)."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.ui.chat.model import RowKind, rows_for

from ..session_views import session_view


def test_a_server_tool_row_names_the_tool_and_its_server() -> None:
    nodes = [
        Node("q", 0, 1.0, "s", "user", output="add two and three"),
        Node("a", 1, 2.0, "s", "assistant", output="", predecessor="q",
             metadata={"model": "openai/gpt-4o"}),
        Node("t", 2, 3.0, "s", "tool", name="alpha__add", input={"a": 2, "b": 3}, output="5",
             caller="a"),
        Node("r", 3, 4.0, "s", "assistant", output="Five.", predecessor="a"),
    ]
    rows = rows_for(session_view(nodes))
    (tool,) = [r for r in rows if r.kind is RowKind.TOOL]
    assert tool.label == "add (alpha)"


def test_a_turn_that_opens_with_a_tool_call_names_its_model_as_the_others_do() -> None:
    nodes = [
        Node("q", 0, 1.0, "s", "user", output="add two and three"),
        Node("a", 1, 2.0, "s", "assistant", output="", predecessor="q",
             metadata={"model": "openai/gpt-4o"}),
        Node("t", 2, 3.0, "s", "tool", name="alpha__add", output="5", caller="a"),
        Node("r", 3, 4.0, "s", "assistant", output="Five.", predecessor="a",
             metadata={"model": "openai/gpt-4o"}),
    ]
    rows = rows_for(session_view(nodes), name=lambda m: "OpenAI · GPT-4o")
    (tool,) = [r for r in rows if r.kind is RowKind.TOOL]
    (reply,) = [r for r in rows if r.kind is RowKind.ASSISTANT]
    assert tool.model == reply.model == "OpenAI · GPT-4o"
