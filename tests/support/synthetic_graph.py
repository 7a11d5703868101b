"""Deterministic conversation graphs of any size for graph tests, benchmarks and screenshots:
a main line of turns with tool calls, retries, edits and side branches, like a long session."""

from __future__ import annotations

import random

from treechat.core.model import Node, Role

SENTENCE = (
    "Let us look at the failing test first, then at the parser change that came with it. "
    "The fix is small but the reasoning behind it matters for the next refactor."
)
LOREM = tuple(SENTENCE.split())


def conversation(count: int, *, seed: int = 7, session_id: str = "s") -> list[Node]:
    """`count` nodes in seq order. Retries and edits fork off random earlier turns, so the
    graph is as wide as a heavily explored real session, not just a line."""
    rng = random.Random(seed)
    nodes: list[Node] = []
    tips: list[str] = []  # heads of open branches, the newest last

    def add(role: Role, *, predecessor: str | None = None, caller: str | None = None,
            name: str = "", metadata: dict[str, object] | None = None) -> Node:
        i = len(nodes)
        words = rng.randint(4, 40)
        text = " ".join(rng.choice(LOREM) for _ in range(words))
        n = Node(
            id=f"{session_id}-{i:05d}",
            seq=i + 1,
            created_at=1_700_000_000.0 + i * 7,
            session_id=session_id,
            role=role,
            name=name,
            output=text,
            predecessor=predecessor,
            caller=caller,
            metadata=dict(metadata or {}),
        )
        nodes.append(n)
        return n

    user = add("user")
    tips.append(user.id)
    while len(nodes) < count:
        roll = rng.random()
        head = tips[-1] if roll < 0.85 else rng.choice(tips)
        last = next(n for n in reversed(nodes) if n.id == head)
        if last.role == "assistant":
            user = add("user", predecessor=last.id)
        elif last.role == "user" and rng.random() < 0.08 and last.predecessor:
            user = add("user", predecessor=last.predecessor, metadata={"edited_from": last.id})
        else:
            user = last
        reply = add("assistant", predecessor=user.id, name="openai/gpt-4o")
        if rng.random() < 0.3 and len(nodes) < count - 3:
            for k in range(rng.randint(1, 3)):
                add("tool", caller=reply.id, name=rng.choice(["read_file", "search", "todo"]),
                    metadata={"tool_call_id": f"c{len(nodes)}-{k}"})
            reply = add("assistant", predecessor=reply.id, name="openai/gpt-4o")
        if rng.random() < 0.1:
            retry = add("assistant", predecessor=user.id, name="openai/gpt-4o")
            tips.append(retry.id)
        if head in tips:
            tips.remove(head)
        tips.append(reply.id)
        if len(tips) > 12:
            tips.pop(0)
    return nodes[:count]
