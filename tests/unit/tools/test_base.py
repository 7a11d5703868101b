"""ToolBox: stable tool list, argument checking, and failures turned into results."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from treechat.tools.base import (
    PROTECTED_TOOLS,
    JSONSchema,
    ToolBox,
    ToolError,
    ToolResult,
    object_schema,
)
from treechat.tools.files import Workspace, file_tools
from treechat.tools.todo import MappingTodoPersistence, todo_tools


@dataclass(frozen=True)
class Scripted:
    """A tool whose behaviour is set by the test: return, raise, or hang."""

    name: str
    behaviour: str = "ok"
    description: str = "test tool"

    @property
    def parameters(self) -> JSONSchema:
        return object_schema({"n": {"type": "integer"}})

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        if self.behaviour == "raise":
            raise KeyError("boom")
        if self.behaviour == "tool_error":
            raise ToolError("n is too large")
        if self.behaviour == "hang":
            await asyncio.sleep(3600)
        if self.behaviour == "wrong_type":
            return "plain string"  # type: ignore[return-value]
        return ToolResult.success(f"n={args.get('n')}")


def test_protected_tools_are_the_spec_set() -> None:
    assert frozenset({"todo_create", "todo_update", "todo_list", "web_search"}) == PROTECTED_TOOLS


def test_order_is_by_name_whatever_the_registration_order(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    todos = todo_tools(MappingTodoPersistence({}, "k"))
    forward = ToolBox([*file_tools(ws), *todos])
    backward = ToolBox([*reversed(todos), *reversed(file_tools(ws))])
    assert forward.names == backward.names == (
        "list_dir", "read_file", "search_text", "todo_create", "todo_list", "todo_update",
    )
    assert json.dumps(forward.specs()) == json.dumps(backward.specs())


def test_schema_key_order_is_fixed(tmp_path: Path) -> None:
    spec = ToolBox(file_tools(Workspace(tmp_path))).specs()[1]
    assert list(spec) == ["type", "function"]
    assert list(spec["function"]) == ["name", "description", "parameters"]
    params = spec["function"]["parameters"]
    assert list(params) == ["type", "properties", "required", "additionalProperties"]
    assert list(params["properties"]) == ["path", "start_line", "max_lines"]
    assert params["required"] == ["path"]


def test_object_schema_rejects_unknown_required() -> None:
    with pytest.raises(ValueError, match="not among the properties"):
        object_schema({"a": {"type": "string"}}, required=["b"])


def test_duplicate_names_are_refused() -> None:
    box = ToolBox([Scripted("a")])
    with pytest.raises(ValueError, match="already registered"):
        box.add(Scripted("a"))


@pytest.mark.asyncio
async def test_a_tool_that_raises_gives_an_error_result() -> None:
    box = ToolBox([Scripted("boom", "raise"), Scripted("soft", "tool_error"),
                   Scripted("odd", "wrong_type"), Scripted("fine")])
    assert await box.call("boom", {}) == ToolResult(False, "boom failed: KeyError: 'boom'")
    assert await box.call("soft", {}) == ToolResult(False, "soft: n is too large")
    assert await box.call("odd", {}) == ToolResult(False, "odd returned str, not a result")
    assert await box.call("fine", '{"n": 3}') == ToolResult(True, "n=3")
    assert await box.call("fine", "") == ToolResult(True, "n=None")


@pytest.mark.asyncio
async def test_argument_errors_name_the_problem() -> None:
    box = ToolBox([Scripted("t")])
    assert await box.call("t", '{"n": true}') == ToolResult(
        False, "t: argument 'n' must be integer, got boolean"
    )
    assert await box.call("t", "[1, 2]") == ToolResult(False, "t: arguments must be a JSON object")


@pytest.mark.asyncio
async def test_stopping_a_turn_cancels_the_tool() -> None:
    box = ToolBox([Scripted("slow", "hang")])
    task = asyncio.create_task(box.call("slow", {}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
