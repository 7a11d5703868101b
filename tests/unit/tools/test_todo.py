"""Todo tools: a per-session plan that survives turns and restarts, and is protected from aging."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from treechat.tools.base import PROTECTED_TOOLS, ToolBox, ToolResult
from treechat.tools.todo import MappingTodoPersistence, todo_tools


def box_for(storage: dict[str, Any], session: str) -> ToolBox:
    return ToolBox(todo_tools(MappingTodoPersistence(storage, f"todos:{session}")))


def test_todo_tools_are_protected_from_aging() -> None:
    names = set(box_for({}, "s").names)
    assert names == {"todo_create", "todo_update", "todo_list"}
    assert names <= PROTECTED_TOOLS


@pytest.mark.asyncio
async def test_create_update_list() -> None:
    box = box_for({}, "s")
    assert await box.call("todo_list", {}) == ToolResult(True, "No todos yet.")
    first = await box.call("todo_create", {"title": "Read the README"})
    assert first == ToolResult(
        True, "Created todo #1.\nTodos (0/1 closed):\n[ ] #1 Read the README"
    )
    await box.call("todo_create", {"title": "Fix the bug", "notes": "in parser.py"})
    await box.call("todo_update", {"id": 1, "status": "done"})
    await box.call("todo_update", {"id": 2, "status": "in_progress"})
    listing = await box.call("todo_list", {})
    assert listing.text.splitlines() == [
        "Todos (1/2 closed):",
        "[x] #1 Read the README",
        "[~] #2 Fix the bug — in parser.py",
    ]


@pytest.mark.asyncio
async def test_update_errors_are_results() -> None:
    box = box_for({}, "s")
    await box.call("todo_create", {"title": "one"})
    missing = await box.call("todo_update", {"id": 9, "status": "done"})
    assert missing == ToolResult(False, "todo_update: no todo #9; existing: #1")
    bad = await box.call("todo_update", {"id": 1, "status": "finished"})
    assert not bad.ok and "must be one of pending, in_progress, done, cancelled" in bad.text
    nothing = await box.call("todo_update", {"id": 1})
    assert not nothing.ok and "at least one of" in nothing.text
    empty = await box.call("todo_create", {"title": "   "})
    assert empty == ToolResult(False, "todo_create: title must not be empty")


@pytest.mark.asyncio
async def test_state_is_per_session_and_persists_across_instances() -> None:
    storage: dict[str, Any] = {}
    await box_for(storage, "a").call("todo_create", {"title": "alpha task"})
    await box_for(storage, "b").call("todo_create", {"title": "beta task"})
    # A fresh set of tools (a new turn, or a restart) sees what was saved.
    again = await box_for(storage, "a").call("todo_list", {})
    assert again.text.splitlines()[1:] == ["[ ] #1 alpha task"]
    assert storage["todos:b"] == [
        {"id": 1, "title": "beta task", "status": "pending", "notes": ""}
    ]


class SlowPersistence:
    """Saves with a delay, so concurrent calls would interleave without the lock."""

    def __init__(self) -> None:
        self.saved: list[list[dict[str, Any]]] = []

    async def load(self) -> Sequence[Mapping[str, Any]]:
        return self.saved[-1] if self.saved else []

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None:
        await asyncio.sleep(0.001)
        self.saved.append([dict(i) for i in items])


@pytest.mark.asyncio
async def test_concurrent_creates_get_distinct_ids() -> None:
    persistence = SlowPersistence()
    box = ToolBox(todo_tools(persistence))
    results = await asyncio.gather(
        *(box.call("todo_create", {"title": f"t{i}"}) for i in range(5))
    )
    assert all(r.ok for r in results)
    assert [item["id"] for item in persistence.saved[-1]] == [1, 2, 3, 4, 5]


class FailingPersistence:
    async def load(self) -> Sequence[Mapping[str, Any]]:
        return []

    async def save(self, items: Sequence[Mapping[str, Any]]) -> None:
        raise OSError("disk full")


@pytest.mark.asyncio
async def test_a_failing_save_is_an_error_and_does_not_run_ahead() -> None:
    box = ToolBox(todo_tools(FailingPersistence()))
    result = await box.call("todo_create", {"title": "x"})
    assert result == ToolResult(False, "todo_create failed: OSError: disk full")
    assert await box.call("todo_list", {}) == ToolResult(True, "No todos yet.")
