"""Builds conversation nodes for context-engine tests: user turns, assistant replies and
tool calls with consecutive seqs and a clock that moves a minute per node."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from treechat.core.model import Node


@dataclass
class ChainBuilder:
    session_id: str = "s"
    seq: int = 0
    now: float = 1_000.0
    head: str | None = None
    nodes: list[Node] = field(default_factory=list)
    step: float = 60.0

    def _next(self, prefix: str) -> tuple[str, int, float]:
        self.seq += 1
        self.now += self.step
        return f"{prefix}{self.seq}", self.seq, self.now

    def user(self, text: str, **meta: Any) -> Node:
        nid, seq, now = self._next("u")
        node = Node(id=nid, seq=seq, created_at=now, session_id=self.session_id, role="user",
                    output=text, predecessor=self.head, metadata=dict(meta))
        self.nodes.append(node)
        self.head = nid
        return node

    def assistant(self, text: str, **meta: Any) -> Node:
        nid, seq, now = self._next("a")
        node = Node(id=nid, seq=seq, created_at=now, session_id=self.session_id,
                    role="assistant", output=text, predecessor=self.head, metadata=dict(meta))
        self.nodes.append(node)
        self.head = nid
        return node

    def tool(self, caller: Node, name: str, result: str, args: Any = None,
             call_id: str | None = None) -> Node:
        nid, seq, now = self._next("t")
        node = Node(id=nid, seq=seq, created_at=now, session_id=self.session_id, role="tool",
                    name=name, input=args if args is not None else {"q": nid}, output=result,
                    caller=caller.id, metadata={"tool_call_id": call_id or f"call-{nid}"})
        self.nodes.append(node)
        return node

    def runtime(self, name: str, text: str, metadata: dict[str, Any]) -> Node:
        nid, seq, now = self._next("r")
        node = Node(id=nid, seq=seq, created_at=now, session_id=self.session_id, role="runtime",
                    name=name, output=text, predecessor=self.head, metadata=metadata)
        self.nodes.append(node)
        self.head = nid
        return node

    def turn(self, user: str, reply: str, tools: Sequence[tuple[str, str]] = ()) -> list[Node]:
        start = len(self.nodes)
        self.user(user)
        a = self.assistant(reply)
        for name, result in tools:
            self.tool(a, name, result)
        return self.nodes[start:]
