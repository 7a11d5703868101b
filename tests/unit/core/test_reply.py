"""Reasoning kept apart from the answer, and continuations joined to the reply they finish."""

from __future__ import annotations

from typing import Any

from treechat.core.model import Node
from treechat.core.reply import (
    CONTINUES_KEY,
    REASONING_KEY,
    can_continue,
    continuation_of,
    joined_runs,
    reasoning_of,
    with_reasoning,
)


def node(nid: str, role: str = "assistant", text: str = "answer", parent: str | None = None,
         **meta: Any) -> Node:
    return Node(id=nid, seq=0, created_at=0.0, session_id="s", role=role,  # type: ignore[arg-type]
                output=text, predecessor=parent, metadata=meta)


def test_reasoning_is_read_from_its_one_key_and_from_older_imports() -> None:
    assert reasoning_of(node("a", **{REASONING_KEY: "step by step"})) == "step by step"
    assert reasoning_of(node("b", thinking="older import")) == "older import"
    assert reasoning_of({"reasoning": True}) == ""  # a flag, not reasoning text
    assert reasoning_of(node("c")) == ""


def test_with_reasoning_writes_one_key_and_leaves_the_answer_alone() -> None:
    meta = with_reasoning({"model": "m", "thinking": "old"}, "new thoughts")
    assert meta == {"model": "m", REASONING_KEY: "new thoughts"}
    assert with_reasoning({"model": "m"}, "") == {"model": "m"}
    assert with_reasoning({"thinking": "kept"}, "") == {REASONING_KEY: "kept"}


def test_only_a_cut_short_reply_with_text_can_be_continued() -> None:
    assert can_continue(node("a", interrupted=True))
    assert can_continue(node("b", finish_reason="length"))
    assert not can_continue(node("c", finish_reason="stop"))
    assert not can_continue(node("d", text="", interrupted=True))
    assert not can_continue(node("e", role="user", interrupted=True))


def test_a_continuation_joins_the_run_of_the_reply_it_continues() -> None:
    path = (
        node("u", role="user", text="q"),
        node("a", finish_reason="length"),
        node("b", parent="a", **{CONTINUES_KEY: "a"}),
        node("c", parent="b", **{CONTINUES_KEY: "b"}),
        node("u2", role="user", text="next", parent="c"),
    )
    assert continuation_of(path[2]) == "a" and continuation_of(path[1]) is None
    assert [[n.id for n in run] for run in joined_runs(path)] == [["u"], ["a", "b", "c"], ["u2"]]
