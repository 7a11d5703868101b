"""The graph's records refuse what would break the graph and show their content as text."""

from __future__ import annotations

import pytest

from treechat.core.model import GraphError, Node


def node(**fields: object) -> Node:
    base: dict[str, object] = {"id": "n", "seq": 1, "created_at": 0.0, "session_id": "s",
                               "role": "user"}
    return Node(**{**base, **fields})  # type: ignore[arg-type]


def test_a_node_hangs_from_one_edge_of_a_known_kind_and_never_from_itself() -> None:
    with pytest.raises(GraphError, match="unknown role 'robot'"):
        node(role="robot")
    with pytest.raises(GraphError, match="mutually exclusive"):
        node(role="tool", predecessor="a", caller="b")
    with pytest.raises(GraphError, match="cannot point at itself"):
        node(predecessor="n")
    with pytest.raises(GraphError, match="cannot point at itself"):
        node(role="tool", caller="n")
    assert node(predecessor="a").parent == "a"
    assert node(role="tool", caller="b").parent == "b"
    assert node().parent is None


@pytest.mark.parametrize(
    ("output", "text"),
    [
        (None, ""),
        ("plain words", "plain words"),
        ({"text": "from a block", "parts": [1]}, "from a block"),
        ({"b": 2, "a": "é"}, '{"a": "é", "b": 2}'),
        ([1, "two"], '[1, "two"]'),
    ],
)
def test_any_output_shows_as_text(output: object, text: str) -> None:
    assert node(output=output).text == text


def test_what_a_node_is_reads_from_its_role_name_and_metadata() -> None:
    assert node(role="assistant", metadata={"interrupted": True}).interrupted
    assert not node(role="assistant").interrupted
    assert node(role="runtime", name="attach").is_attach
    assert node(role="runtime", name="merge").is_merge
    assert not node(role="user", name="attach").is_attach
