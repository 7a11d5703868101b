"""The tool calls a reply asked for, each run in turn and written as a tool node under it; a
stop while a call runs (or awaits approval) is written as that call's cancelled result."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from ...core.clock import Clock
from ...core.model import Node
from ...providers import stream as provider_stream
from ...store.database import Store
from ...tools.base import ToolResult
from ..store_life.store_release import StoreNotBackError
from .events import NodeAdded
from .replies import appender, tool_node
from .turn import Turn


class ToolRuns:
    def __init__(self, store: Store, *, clock: Clock, make_id: Callable[[], str]) -> None:
        self.store = store
        self.clock = clock
        self.make_id = make_id

    async def run(
        self, turn: Turn, reply: Node, calls: Sequence[provider_stream.ToolCall]
    ) -> bool:
        """Run `calls` in order; False when the turn was stopped during one (what ran is
        written, the interrupted call as cancelled)."""
        for call in calls:
            try:
                result = await turn.toolbox.call(call.name, call.arguments)
                if self.store.released:  # a remote tool's answer, and the store held elsewhere
                    raise StoreNotBackError(result.text)
            except asyncio.CancelledError:
                # Stopped while the call ran or awaited approval: the call is cancelled with
                # the turn (as a stopped stream is), and the graph says so.
                cancelled = ToolResult.error(f"{call.name}: cancelled, the turn was stopped")
                await asyncio.shield(self._write(turn, reply, call, cancelled))
                return False
            await self._write(turn, reply, call, result)
        return True

    async def _write(
        self, turn: Turn, reply: Node, call: provider_stream.ToolCall, result: ToolResult
    ) -> None:
        node = tool_node(self.make_id(), turn.session_id, reply, call, result, self.clock.now())
        (saved,) = await self.store.run(appender(node))
        turn.log.wrote(saved, moves_head=False)  # a tool result hangs under its reply
        turn.sink(NodeAdded(turn.session_id, saved))
