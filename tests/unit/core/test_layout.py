"""Layout of the history graph: layered, stable under additions, siblings side by side."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from treechat.core.layout import EMPTY_LAYOUT, extend_layout, layout_graph
from treechat.core.model import Node


def node(i: int, role: str, *, predecessor: str | None = None, caller: str | None = None) -> Node:
    return Node(
        id=f"n{i}",
        seq=i,
        created_at=float(i),
        session_id="s",
        role=role,  # type: ignore[arg-type]
        output=f"text {i}",
        predecessor=predecessor,
        caller=caller,
    )


@st.composite
def graphs(draw: st.DrawFn) -> list[Node]:
    """A random conversation: each new node hangs from an earlier one, like a real session
    grown by sends, retries, edits, tool calls and the odd extra root."""
    count = draw(st.integers(min_value=1, max_value=80))
    nodes: list[Node] = []
    for i in range(count):
        if not nodes or draw(st.integers(0, 30)) == 0:
            nodes.append(node(i, "user"))
            continue
        parent = nodes[draw(st.integers(0, len(nodes) - 1))]
        if parent.role == "assistant" and draw(st.booleans()):
            nodes.append(node(i, "tool", caller=parent.id))
        else:
            role = draw(st.sampled_from(["user", "assistant", "runtime", "assistant"]))
            nodes.append(node(i, role, predecessor=parent.id))
    return nodes


@given(graphs(), st.data())
@settings(max_examples=200, deadline=None)
def test_adding_nodes_never_moves_existing_ones(nodes: list[Node], data: st.DataObject) -> None:
    cuts = sorted(data.draw(st.lists(st.integers(0, len(nodes)), max_size=5)))
    layout = EMPTY_LAYOUT
    start = 0
    for cut in [*cuts, len(nodes)]:
        before = {k: layout.cell(k) for k in layout.placements}
        # the chunk is handed over shuffled: order of arrival must not matter, only seq
        chunk = list(reversed(nodes[start:cut]))
        layout = extend_layout(layout, chunk)
        assert {k: layout.cell(k) for k in before} == before
        start = max(start, cut)
    whole = layout_graph(nodes)
    assert {k: layout.cell(k) for k in layout.placements} == {
        k: whole.cell(k) for k in whole.placements
    }


@given(graphs())
@settings(max_examples=200, deadline=None)
def test_no_two_nodes_share_a_cell_and_children_sit_one_row_down(nodes: list[Node]) -> None:
    layout = layout_graph(nodes)
    cells = [layout.cell(n.id) for n in nodes]
    assert len(set(cells)) == len(nodes)
    for n in nodes:
        column, row = layout.cell(n.id)
        assert column >= 0
        if n.parent is None:
            assert row == 0
        else:
            assert row == layout.cell(n.parent)[1] + 1


@given(graphs())
@settings(max_examples=200, deadline=None)
def test_siblings_sit_side_by_side_in_seq_order(nodes: list[Node]) -> None:
    layout = layout_graph(nodes)
    by_parent: dict[str, list[Node]] = {}
    for n in nodes:
        if n.parent is not None:
            by_parent.setdefault(n.parent, []).append(n)
    for parent, children in by_parent.items():
        conversation = [c for c in children if c.predecessor == parent]
        rows = {layout.cell(c.id)[1] for c in children}
        assert len(rows) <= 1
        columns = [layout.cell(c.id)[0] for c in conversation]
        assert columns == sorted(columns)


def test_first_reply_continues_straight_down_and_tool_calls_go_to_the_side() -> None:
    nodes = [
        node(1, "user"),
        node(2, "assistant", predecessor="n1"),
        node(3, "tool", caller="n2"),
        node(4, "tool", caller="n2"),
        node(5, "assistant", predecessor="n2"),
        node(6, "user", predecessor="n5"),
    ]
    layout = layout_graph(nodes)
    assert [layout.cell(f"n{i}") for i in (1, 2, 5, 6)] == [(0, 0), (0, 1), (0, 2), (0, 3)]
    assert layout.cell("n3") == (1, 2)
    assert layout.cell("n4") == (2, 2)


def test_a_retry_opens_a_lane_beside_the_original_and_keeps_it() -> None:
    base = [node(1, "user"), node(2, "assistant", predecessor="n1")]
    layout = layout_graph(base)
    retry = node(3, "assistant", predecessor="n1")
    follow_up = node(4, "user", predecessor="n3")
    layout = extend_layout(layout, [retry, follow_up])
    assert layout.cell("n2") == (0, 1)
    assert layout.cell("n3") == (1, 1)
    assert layout.cell("n4") == (1, 2)
    assert (layout.width, layout.depth) == (2, 3)


def test_a_node_whose_parent_is_missing_becomes_a_root_in_a_fresh_column() -> None:
    layout = layout_graph([node(1, "user"), node(2, "user", predecessor="gone")])
    assert layout.cell("n1") == (0, 0)
    assert layout.cell("n2") == (1, 0)
    assert layout.placements["n2"].parent is None
