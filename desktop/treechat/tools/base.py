"""The tool protocol, its result type and `ToolBox`, the registry the agent loop calls through.

A tool never crashes a turn: whatever it raises becomes an error result the model can read.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# Tools whose calls and results stay whole in the context however old they are (spec §5):
# they carry the plan the model is following, which is cheap and costly to forget.
PROTECTED_TOOLS: frozenset[str] = frozenset(
    {"todo_create", "todo_update", "todo_list", "web_search"}
)

JSONSchema = dict[str, Any]


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call gives back to the model: success or failure, always as text.
    `metadata` lands on the tool node (e.g. which MCP server answered)."""

    ok: bool
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def success(cls, text: str) -> ToolResult:
        return cls(True, text)

    @classmethod
    def error(cls, text: str) -> ToolResult:
        return cls(False, text)


class ToolError(Exception):
    """An expected failure whose message is written for the model (bad path, unknown id...)."""


@runtime_checkable
class Tool(Protocol):
    """A callable capability offered to the model.

    `parameters` is a JSON schema object whose key order is fixed by construction, so the
    tool list renders to the same bytes on every turn (it sits in the cached prefix).
    """

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    @property
    def parameters(self) -> JSONSchema: ...

    async def call(self, args: Mapping[str, Any]) -> ToolResult: ...


def object_schema(
    properties: Mapping[str, JSONSchema], required: Sequence[str] = ()
) -> JSONSchema:
    """A JSON schema for an object argument, with keys in one fixed order.

    Properties keep the order they are declared in; `required` keeps declaration order too.
    """
    unknown = [name for name in required if name not in properties]
    if unknown:
        raise ValueError(f"required names not among the properties: {unknown}")
    ordered_required = [name for name in properties if name in set(required)]
    return {
        "type": "object",
        "properties": {name: dict(spec) for name, spec in properties.items()},
        "required": ordered_required,
        "additionalProperties": False,
    }


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
}


def check_args(schema: Mapping[str, Any], args: Mapping[str, Any]) -> None:
    """Check `args` against the subset of JSON schema the built-in tools use.

    Raises ToolError naming the first problem, so the model can correct its call.
    """
    properties: Mapping[str, Any] = schema.get("properties", {})
    for name in schema.get("required", ()):
        if name not in args or args[name] is None:
            raise ToolError(f"missing required argument {name!r}")
    if schema.get("additionalProperties") is False:
        extra = sorted(set(args) - set(properties))
        if extra:
            allowed = ", ".join(properties) or "none"
            raise ToolError(f"unknown argument(s) {', '.join(extra)}; allowed: {allowed}")
    for name, value in args.items():
        spec = properties.get(name)
        if spec is None or value is None:
            continue
        expected = spec.get("type")
        if isinstance(expected, str) and expected in _JSON_TYPES:
            python_types = _JSON_TYPES[expected]
            # bool is an int in Python but not in JSON.
            if isinstance(value, bool) and expected in ("integer", "number"):
                raise ToolError(f"argument {name!r} must be {expected}, got boolean")
            if not isinstance(value, python_types):
                raise ToolError(
                    f"argument {name!r} must be {expected}, got {type(value).__name__}"
                )
        allowed_values = spec.get("enum")
        if allowed_values is not None and value not in allowed_values:
            raise ToolError(
                f"argument {name!r} must be one of {', '.join(map(str, allowed_values))}"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            low, high = spec.get("minimum"), spec.get("maximum")
            if low is not None and value < low:
                raise ToolError(f"argument {name!r} must be at least {low}")
            if high is not None and value > high:
                raise ToolError(f"argument {name!r} must be at most {high}")


def parse_args(raw: Mapping[str, Any] | str | None) -> dict[str, Any]:
    """Tool arguments as a dict, from the JSON text a model sends or an already-parsed map."""
    if raw is None:
        return {}
    if isinstance(raw, Mapping):
        return dict(raw)
    text = raw.strip()
    if not text:
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ToolError(f"arguments are not valid JSON: {exc.msg} at position {exc.pos}") from exc
    if not isinstance(value, dict):
        raise ToolError("arguments must be a JSON object")
    return value


class ToolBox:
    """The tools offered in one session, in a stable order (sorted by name).

    Sorting makes the rendered tool list independent of the order tools were registered in,
    so it stays byte-identical across turns and processes.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        self._tools = dict(sorted(self._tools.items()))

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    def specs(self) -> list[dict[str, Any]]:
        """The tool list in OpenAI function format (what litellm's `tools=` takes)."""
        return [
            {
                "type": "function",
                "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                },
            }
            for tool in self._tools.values()
        ]

    async def call(self, name: str, raw_args: Mapping[str, Any] | str | None) -> ToolResult:
        """Run one tool call. Every failure, expected or not, comes back as an error result.

        Cancellation is not a failure: it propagates so that stopping a turn stops the tool.
        """
        tool = self._tools.get(name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return ToolResult.error(f"unknown tool {name!r}; available tools: {known}")
        try:
            args = parse_args(raw_args)
            check_args(tool.parameters, args)
            # Typed as object: a third-party tool may break the protocol at run time.
            result: object = await tool.call(args)
        except asyncio.CancelledError:
            raise
        except ToolError as exc:
            return ToolResult.error(f"{name}: {exc}")
        except Exception as exc:
            return ToolResult.error(f"{name} failed: {type(exc).__name__}: {exc}")
        if not isinstance(result, ToolResult):
            return ToolResult.error(f"{name} returned {type(result).__name__}, not a result")
        return result
