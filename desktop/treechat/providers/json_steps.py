"""`json.loads` in steps: litellm's price list parsed one top-level member at a time, so the
thread importing litellm hands the GIL back between members (the window's loop keeps
running), with the result `json.loads` gives."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

BIG_JSON = 1 << 20
_JSON_SPACE = re.compile(r"[ \t\n\r]*")


def loads_in_steps(original: Callable[..., Any]) -> Callable[..., Any]:
    """`json.loads` that parses a large top-level object one member at a time.

    litellm parses its 3.5 MB price list with one `json.loads` call at import, which holds the
    GIL for 50-150 ms and freezes the GUI thread's loop meanwhile. Member by member, the
    import thread hands the GIL back between members. The result is identical; anything
    unusual (another top-level type, invalid JSON, extra arguments) goes to the original.
    """

    def loads(s: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not isinstance(s, str | bytes | bytearray) or len(s) < BIG_JSON:
            return original(s, *args, **kwargs)
        text = s if isinstance(s, str) else bytes(s).decode("utf-8")
        try:
            return _parse_object_members(text)
        except (ValueError, IndexError):
            return original(s)

    return loads


def _after_space(text: str, pos: int) -> int:
    """Where the JSON whitespace from `pos` ends (the pattern also matches none)."""
    found = _JSON_SPACE.match(text, pos)
    return pos if found is None else found.end()


def _parse_object_members(text: str) -> dict[str, Any]:
    # One `json.loads` shares each key string across the whole document; member by member
    # it would not, and the price list's repeated keys and names ("litellm_provider",
    # "chat", ...) would cost 5 MB more than in one call: they are shared here, across
    # members (4 MB kept instead of 9.6).
    shared: dict[str, str] = {}

    def members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        return {shared.setdefault(k, k): shared.setdefault(v, v) if type(v) is str else v
                for k, v in pairs}

    decoder = json.JSONDecoder(object_pairs_hook=members)
    skip = _after_space
    pos = skip(text, 0)
    if text[pos] != "{":
        raise ValueError("not an object")
    pos = skip(text, pos + 1)
    out: dict[str, Any] = {}
    if text[pos] == "}":
        pos += 1
    else:
        while True:
            key, pos = decoder.raw_decode(text, pos)
            if not isinstance(key, str):
                raise ValueError("object key is not a string")
            pos = skip(text, pos)
            if text[pos] != ":":
                raise ValueError("expected ':'")
            pos = skip(text, pos + 1)
            out[key], pos = decoder.raw_decode(text, pos)
            pos = skip(text, pos)
            if text[pos] == ",":
                pos = skip(text, pos + 1)
                continue
            if text[pos] == "}":
                pos += 1
                break
            raise ValueError("expected ',' or '}'")
    if skip(text, pos) != len(text):
        raise ValueError("extra data")
    return out
