"""Names and schemas of MCP tools as a provider will see them: one namespace per server, no
collisions, and nothing a provider would refuse (a refused schema fails the whole request)."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from ...core.tool_names import SEPARATOR as TOOL_SEPARATOR

SEPARATOR = TOOL_SEPARATOR  # one namespace per server: `server__tool`
MAX_TOOL_NAME = 64  # OpenAI's limit; Anthropic's and Gemini's are at least as long
_PROVIDER_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
# OpenAI refuses these at the top level of a function's parameters.
_TOP_LEVEL_REFUSED = ("oneOf", "anyOf", "allOf", "not", "enum")


def _clean(part: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", part) or "_"


def public_name(server: str, tool: str) -> str:
    """`server__tool`, with characters providers refuse replaced and long names cut to 64
    characters, ending in a short hash of the original so cut names stay distinct."""
    name = f"{_clean(server)}{SEPARATOR}{_clean(tool)}"
    if len(name) <= MAX_TOOL_NAME:
        return name
    digest = hashlib.sha1(f"{server}\0{tool}".encode()).hexdigest()[:8]
    return f"{name[: MAX_TOOL_NAME - 9]}_{digest}"


def assign_names(
    pairs: Iterable[tuple[str, str]], taken: Iterable[str] = ()
) -> dict[tuple[str, str], str]:
    """Public names for (server, tool) pairs, unique among themselves and against `taken`
    (the built-in tools). Pairs are named in sorted order, so the same servers and tools give
    the same names on every turn, whatever order the servers answered in."""
    used = {t.lower() for t in taken}
    names: dict[tuple[str, str], str] = {}
    for pair in sorted(set(pairs)):
        base = public_name(*pair)
        name, n = base, 2
        # Providers compare tool names case-sensitively, but a model may not: avoid both.
        while name.lower() in used:
            suffix = f"_{n}"
            name = base[: MAX_TOOL_NAME - len(suffix)] + suffix
            n += 1
        used.add(name.lower())
        names[pair] = name
    return names


def schema_problem(schema: Any) -> str | None:
    """Why a provider would refuse this input schema, or None when it can be sent."""
    if not isinstance(schema, Mapping):
        return "its input schema is not a JSON object"
    if schema.get("type", "object") != "object":
        return f"its input schema's top level is {schema.get('type')!r}, not an object"
    refused = [k for k in _TOP_LEVEL_REFUSED if k in schema]
    if refused:
        return f"its input schema uses {', '.join(refused)} at the top level"
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return "its input schema's properties are not an object"
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(r, str) for r in required):
        return "its input schema's required list is not a list of names"
    try:
        json.dumps(schema, allow_nan=False)
    except (TypeError, ValueError) as exc:
        return f"its input schema is not plain JSON ({exc})"
    if not _finite(schema):
        return "its input schema holds a number that is not finite"
    from jsonschema import SchemaError, validators

    try:
        validators.validator_for(dict(schema)).check_schema(dict(schema))
    except SchemaError as exc:
        return f"its input schema is not valid JSON Schema: {exc.message}"
    return None


def _finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, Mapping):
        return all(_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_finite(v) for v in value)
    return True


def provider_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """The schema as sent: an object with a `properties` map (some providers require it),
    without `$schema` (Gemini refuses it). Key order is the server's, so it is stable."""
    out = {k: v for k, v in schema.items() if k != "$schema"}
    out.setdefault("type", "object")
    out.setdefault("properties", {})
    return out


def is_valid_tool_name(name: str) -> bool:
    return bool(_PROVIDER_NAME.match(name))
