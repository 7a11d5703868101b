"""Generating one commit from a parent and new nodes in a single call, as the tests build
them: the rule pipeline with its defaults."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from treechat.core.commit import ContextCommit
from treechat.core.model import Node
from treechat.core.rules import RuleConfig, generate_chain
from treechat.core.tokens import TokenCounter


def generate_commit(
    parent: ContextCommit | None,
    nodes: Sequence[Node],
    *,
    session_id: str,
    head_node_id: str,
    now: float,
    counter: TokenCounter,
    config: Any = None,
    pinned: frozenset[str] = frozenset(),
    attachments: Mapping[str, ContextCommit | None] | None = None,
    compaction: Any = None,
    summarizer: Any = None,
    instructions: str = "",
) -> ContextCommit:
    """Extend `parent` with `nodes` (new nodes of the active path, in order) and run the
    rule pipeline: attach/merge expansion, per-item cap, tool aging, idle clearing and,
    when `compaction` asks for it, summarize. Returns `parent` itself when nothing changed.

    `attachments` maps each attach pointer node id to the source commit it names (None when
    it could not be loaded). Only a merge node yields several parent ids (invariant 7).
    """
    chain = generate_chain(
        parent,
        nodes,
        session_id=session_id,
        head_node_id=head_node_id,
        now=now,
        counter=counter,
        config=config if config is not None else RuleConfig(),
        pinned=pinned,
        attachments=attachments or {},
        compaction=compaction,
        summarizer=summarizer,
        instructions=instructions,
    )
    return chain[-1] if chain else parent
