"""Treechat's own export format: dump and parse give back the same graph."""

from __future__ import annotations

import json
from typing import Any

from treechat.core.imports import parse_export, treechat
from treechat.core.model import Node, Session


def node(nid: str, seq: int, role: str, out: Any, pred: str | None = None,
         caller: str | None = None, **meta: Any) -> Node:
    return Node(id=nid, seq=seq, created_at=100.0 + seq * 0.5, session_id="s1",
                role=role, name="gpt" if role == "assistant" else "",  # type: ignore[arg-type]
                input={"q": 1} if role == "tool" else None, output=out,
                predecessor=pred, caller=caller, metadata=meta)


GRAPH = [
    node("u1", 3, "user", "hello"),
    node("a1", 5, "assistant", "", "u1", tool_calls=[{"id": "c1", "name": "t"}]),
    node("t1", 6, "tool", "result", caller="a1", tool_call_id="c1"),
    node("a2", 7, "assistant", {"text": "done"}, "a1"),
    node("a3", 9, "assistant", "retry", "u1", interrupted=True),
    Node(id="r1", seq=11, created_at=200.0, session_id="other", role="runtime", name="attach",
         output=None, predecessor="a2", reads=("a3",), metadata={"source": "x"}),
]
SESSION = Session("s1", "Tree", "r1", "openai/gpt-4o", 99.0, updated_at=250.0)


def test_dump_then_parse_is_exact() -> None:
    document = json.loads(json.dumps(treechat.dump_session(SESSION, GRAPH, exported_at=1.0)))
    parsed = parse_export(document)
    assert parsed.source_format == "treechat" and parsed.skipped == ()
    (conv,) = parsed.conversations
    assert (conv.source_id, conv.title, conv.model, conv.head_source_id) == (
        "s1", "Tree", "openai/gpt-4o", "r1")
    assert (conv.created_at, conv.updated_at) == (99.0, 250.0)
    assert [m.source_id for m in conv.nodes] == ["u1", "a1", "t1", "a2", "a3", "r1"]
    for original, message in zip(GRAPH, conv.nodes, strict=True):
        assert message.parent_source_id == original.parent
        assert message.edge == ("caller" if original.caller else "predecessor")
        assert (message.role, message.name, message.input, message.output) == (
            original.role, original.name, original.input, original.output)
        assert (message.created_at, message.metadata, message.reads) == (
            original.created_at, original.metadata, original.reads)


def test_empty_messages_and_missing_title_are_kept_as_written() -> None:
    session = Session("s2", "", "e1", "", 1.0, updated_at=1.0)
    empty = Node(id="e1", seq=1, created_at=1.0, session_id="s2", role="assistant", output="")
    (conv,) = treechat.parse(treechat.dump_session(session, [empty], exported_at=0.0)).conversations
    assert [m.output for m in conv.nodes] == [""]
    assert (conv.title, conv.model) == ("", "")


def test_newer_version_is_refused_and_bad_nodes_reported() -> None:
    newer = {"format": "treechat", "version": 99, "session": {}, "nodes": []}
    parsed = treechat.parse(newer)
    assert parsed.conversations == ()
    assert "newer Treechat" in parsed.skipped[0].reason

    document = treechat.dump_session(SESSION, GRAPH[:2], exported_at=0.0)
    document["nodes"].append({"id": "x", "seq": 20, "role": "wizard", "predecessor": "a1"})
    document["nodes"].append({"id": "y", "seq": 21, "role": "user", "predecessor": "a1",
                              "caller": "u1"})
    document["nodes"].append({"seq": 22, "role": "user"})
    parsed = treechat.parse(document)
    assert {s.source_id: s.reason for s in parsed.skipped} == {
        "x": "unknown role 'wizard'",
        "y": "node has both a predecessor and a caller",
        "node-5": "node without an id",
    }
    assert [m.source_id for m in parsed.conversations[0].nodes] == ["u1", "a1"]
