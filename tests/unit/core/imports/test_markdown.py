"""A session as Markdown: the active path, and every branch when asked."""

from __future__ import annotations

from typing import Any

from treechat.core.dag import Graph
from treechat.core.imports.markdown import render_markdown
from treechat.core.model import Node, Session


def n(nid: str, seq: int, role: str, out: Any, pred: str | None = None,
      caller: str | None = None, **meta: Any) -> Node:
    return Node(id=nid, seq=seq, created_at=1_700_000_000.0 + seq, session_id="s",
                role=role, output=out, predecessor=pred, caller=caller,  # type: ignore[arg-type]
                name="calc" if role == "tool" else "", metadata=meta)


NODES = [
    n("sys", 1, "system", None, hidden=True),
    n("u1", 2, "user", "What is 6*7?", "sys"),
    n("a1", 3, "assistant", "Let me compute.", "u1",
      tool_calls=[{"id": "c1", "name": "calc", "arguments": {"expr": "6*7"}}]),
    n("t1", 4, "tool", "```\n42\n```", caller="a1", tool_call_id="c1"),
    n("a2", 5, "assistant", "It is 42.", "a1"),
    n("a3", 6, "assistant", "Forty-two, roughly.", "u1", interrupted=True),
    n("u2", 7, "user", "And 6*8?", "a3"),
]


def session(head: str) -> Session:
    return Session("s", "Sums", head, "openai/gpt-4o", 1_700_000_000.0)


def test_active_path_only_by_default() -> None:
    text = render_markdown(session("a2"), Graph(NODES))
    assert text.startswith("# Sums\n\nModel: `openai/gpt-4o` · Started: 2023-11-14 22:13 UTC")
    assert text.index("What is 6*7?") < text.index("Let me compute.") < text.index("It is 42.")
    assert "Forty-two" not in text and "6*8" not in text
    assert "**System**" not in text  # hidden context is not part of the conversation shown
    assert "_Calls `calc`:_" in text and '{"expr": "6*7"}' in text
    # A result that holds a fence is wrapped in a longer one, so the page stays intact.
    assert "````\n```\n42\n```\n````" in text
    assert "_version 1 of 2_" in text


def test_every_branch_after_the_active_path() -> None:
    text = render_markdown(session("u2"), Graph(NODES), all_branches=True)
    main, _, others = text.partition("## Other branches")
    assert "Forty-two, roughly." in main and "And 6*8?" in main
    assert "_version 2 of 2, interrupted_" in main
    assert "### Branch 2 — after “What is 6*7?”" in others
    assert "It is 42." in others and "Let me compute." in others
    assert others.count("What is 6*7?") == 1  # named as the fork, not written again


def test_hidden_branches_are_left_out() -> None:
    text = render_markdown(session("u2"), Graph(NODES), all_branches=True, hidden=["a1"])
    assert "Other branches" not in text and "It is 42." not in text


def test_empty_session() -> None:
    text = render_markdown(Session("e", "", None, "", 0.0), Graph([]))
    assert text == ("# Untitled\n\nStarted: 1970-01-01 00:00 UTC · Chat: `e`\n\n"
                    "_This chat has no messages yet._\n")


def test_a_messages_files_are_named_once_and_a_placeholder_says_it_was_not_in_the_export(
) -> None:
    asked = Node(id="q", seq=0, created_at=1_700_000_000.0, session_id="s", role="user",
                 output="What is in these?", metadata={"attachments": [
                     {"sha256": "ab" * 32, "name": "chart.png", "media_type": "image/png"},
                     {"placeholder": True, "kind": "file", "name": "report.pdf"}]})
    text = render_markdown(Session("s", "Files", "q", "", 0.0), Graph([asked]))
    assert "What is in these?\n\n_Files: `chart.png`, `report.pdf` (not in the export)_" in text
    assert text.count("report.pdf") == 1
