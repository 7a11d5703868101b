"""The rows of a chat: a tool call from an MCP server is named as people read it, "add
(alpha)", not by the name the model called (`alpha__add`); the rows of part of a path
begin at a turn and read as the same rows of the whole path do."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.ui.chat.rows import RowKind, rows_for, turn_start, with_turn_marks

from ..session_views import chain, session_view


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


def test_the_rows_of_part_of_a_path_are_those_of_the_whole_from_a_turn_on() -> None:
    nodes = [*chain(40), Node("t", 40, 21.5, "s", "tool", name="read_file", output="x",
                              caller="n21")]  # a tool call in the reply of the part's turn
    view = session_view(nodes, head="n39")
    start = turn_start(view.path, 22)  # from the middle of a turn: back to its question
    assert view.path[start].id == "n20" and view.path[start].role == "user"
    whole = with_turn_marks(rows_for(view))
    part = with_turn_marks(rows_for(view, start=start))
    assert [r.key for r in part] == [r.key for r in whole][-len(part):]
    assert part == whole[-len(part):]
    above = rows_for(view, start=turn_start(view.path, 10), stop=start)
    assert [r.key for r in above] == [f"n{i}" for i in range(10, 20)]
    assert turn_start(view.path, 0) == 0
