"""The chat view's rows: a tool call from an MCP server is named as people read it, "add
(alpha)", not by the name the model called (`alpha__add`); a long path shows its end and
brings the rows above in as they are asked for, in order."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.ui.chat.model import ChatModel, RowKind, rows_for

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


def test_a_long_path_shows_its_end_and_brings_earlier_rows_in_at_the_top() -> None:
    model = ChatModel()
    model.set_view(session_view(chain(1_000)))
    assert model.rows[-1].key == "n999" and 0 < len(model.rows) < 1_000
    assert model.has_earlier() and model.rows[0].kind is RowKind.USER  # a turn never cut
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    first_key, before = model.rows[0].key, len(model.rows)
    added = model.show_earlier()
    assert added > 0 and inserted == [(0, added - 1)]  # above: the rows below keep their order
    assert model.rows[added].key == first_key and len(model.rows) == before + added
    # a message far above comes in with everything below it; one not on the path does not
    assert model.show_from("n3") == 1 and model.rows[0].key == "n2"
    assert model.show_from("elsewhere") == -1
    while model.has_earlier():
        model.show_earlier()
    assert [r.key for r in model.rows] == [f"n{i}" for i in range(1_000)]


def test_the_same_chat_read_whole_keeps_the_rows_its_end_showed() -> None:
    nodes = chain(1_000)
    model = ChatModel()
    end = session_view(nodes[-60:])  # what reading the end alone gives
    model.set_view(end)
    shown = [r.key for r in model.rows]
    removed: list[int] = []
    model.rowsRemoved.connect(lambda *_: removed.append(1))
    model.set_view(session_view(nodes))
    assert [r.key for r in model.rows] == shown and not removed
    assert model.has_earlier() and model.show_from("n0") == 0
