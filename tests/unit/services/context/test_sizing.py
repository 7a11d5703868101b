"""How much each part of a request takes: a stable tool order, what compaction a history
calls for, and what a model that cannot see gets for an image."""

from __future__ import annotations

from pathlib import Path

from tests.support.context_graph import ChainBuilder

from treechat.core.attachments import AttachmentPayload
from treechat.core.commit import make_commit
from treechat.core.render import Composition
from treechat.core.rules import RuleConfig, extend_commit
from treechat.providers.tokenizer import counter_for
from treechat.services.context.sizing import (
    categories,
    compaction_mode,
    fixed_tokens,
    stable_tools,
    unseen_image,
)

COUNTER = counter_for("openai/gpt-4o")


def _tool(name: str) -> dict[str, object]:
    return {"type": "function", "function": {"name": name, "parameters": {}}}


def test_tools_are_sorted_by_name_whatever_order_they_came_in() -> None:
    names = [t["function"]["name"] for t in stable_tools([_tool("b"), _tool("a"), _tool("c")])]
    assert names == ["a", "b", "c"]
    assert stable_tools([_tool("b"), _tool("a")]) == stable_tools([_tool("a"), _tool("b")])


def test_the_fixed_parts_grow_with_the_prompt_and_the_tools() -> None:
    short = fixed_tokens(COUNTER, Composition(system_prompt="Hi."), [])
    long = fixed_tokens(COUNTER, Composition(system_prompt="Hi. " * 200), [_tool("x")])
    assert long[0] > short[0] > 0 and long[1] > short[1] == 0


def test_compaction_is_asked_only_when_the_history_is_over_its_budget(tmp_path: Path) -> None:
    rules = RuleConfig()
    b = ChainBuilder("s")
    nodes = [n for i in range(6) for n in b.turn(f"question {i} " + "word " * 80, "ok")]
    commit = extend_commit(None, nodes, session_id="s", head_node_id=nodes[-1].id, now=b.now,
                           counter=COUNTER, config=rules, pinned=frozenset(), attachments={})
    assert commit is not None
    kw = dict(prompt_allowance=100_000, fixed_tokens=0, calibration=1.0)
    assert compaction_mode(rules, commit=None, history_budget=10, force=True, **kw) is None
    assert compaction_mode(rules, commit=commit, history_budget=10, force=True, **kw) == "manual"
    assert compaction_mode(rules, commit=commit, history_budget=100_000, force=False,
                           **kw) is None
    assert compaction_mode(rules, commit=commit, history_budget=commit.total_tokens // 2,
                           force=False, **kw) == "auto"
    assert compaction_mode(rules, commit=commit, history_budget=100_000, force=False,
                           prompt_allowance=commit.total_tokens // 2, fixed_tokens=0,
                           calibration=1.0) == "emergency"
    empty = make_commit(None, (), (), session_id="s", head_node_id="h", now=0.0, max_seq=0)
    assert categories(COUNTER, empty, Composition(system_prompt="Hi."), [])["system"] > 0


def test_a_blind_model_gets_a_note_naming_the_image() -> None:
    payload = AttachmentPayload("sha", (
        {"type": "text", "text": "Image: cat.png"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
    ), text_tokens=3)
    seen = unseen_image(COUNTER, payload, "cat.png")
    assert [b["type"] for b in seen.blocks] == ["text"]
    assert "cat.png" in str(seen.blocks[0]["text"]) and not seen.has_image
