"""What a turn reports it changed: the nodes in the order written, the head the last
head-moving write left, the usage rows, the model switch."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.services.turns.changes import ChangeLog, TurnChanges


def _node(node_id: str, role: str = "assistant") -> Node:
    return Node(id=node_id, seq=0, created_at=0.0, session_id="s", role=role, output=node_id)


def test_the_log_keeps_the_order_and_the_last_head() -> None:
    log = ChangeLog("s")
    log.wrote(_node("u", "user"))
    log.wrote(_node("a"))
    log.wrote(_node("t", "tool"), moves_head=False)
    log.recorded("row-1")
    changes = log.changes()
    assert changes.session_id == "s"
    assert changes.node_ids == ("u", "a", "t")
    assert changes.head == "a"  # a tool result hangs under its reply, HEAD stays there
    assert changes.usage == ("row-1",)
    assert changes.model is None and changes.wrote


def test_a_snapshot_does_not_move_with_the_log() -> None:
    log = ChangeLog("s")
    before = log.changes()
    log.wrote(_node("a"))
    log.switched_model("openai/gpt-4o")
    assert before == TurnChanges("s") and not before.wrote
    after = log.changes()
    assert after.head == "a" and after.model == "openai/gpt-4o"


def test_a_model_switch_alone_is_a_change() -> None:
    log = ChangeLog("s")
    log.switched_model("ollama/llama3.2")
    assert log.changes().wrote and log.changes().head is None
