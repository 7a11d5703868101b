"""Hypothesis strategies for what a hostile or broken peer sends: JSON of any shape (nested
deep), text that is almost JSON, and the same cut or padded with noise."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

scalars = (st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
           | st.text(max_size=24))
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=10), inner,
                                                                max_size=5),
    max_leaves=25,
)


DEEP = "\u0000deep\u0000"  # stands for a value nested thousands deep, put in as text


def deep_text(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a": ' * depth + "0"
                                                                + "}" * depth)


def shaped_like(template: Any) -> st.SearchStrategy[Any]:
    """A real answer with one of its values replaced by another of any shape (or by `DEEP`)."""
    new_values = st.one_of(json_values, st.just(DEEP))
    return st.tuples(new_values, st.integers(0, 1000)).map(
        lambda pair: _swap(template, *pair)) | st.just(template)


def _swap(template: Any, new: Any, pick: int) -> Any:
    if isinstance(template, dict) and template:
        key = sorted(template)[pick % len(template)]
        inner = template[key]
        if isinstance(inner, (dict, list)) and inner and pick % 2:
            return {**template, key: _swap(inner, new, pick // 2)}
        return {**template, key: new}
    if isinstance(template, list) and template:
        index = pick % len(template)
        copy = list(template)
        copy[index] = _swap(copy[index], new, pick // 2) if pick % 2 else new
        return copy
    return new


@st.composite
def damaged_json_bytes(draw: st.DrawFn, template: Any) -> bytes:
    """A real answer encoded, with a value swapped (perhaps for one nested thousands deep),
    then perhaps cut short or with noise put in somewhere."""
    text = json.dumps(draw(shaped_like(template)))
    depth = draw(st.integers(1, 5000))
    kind = draw(st.sampled_from(["list", "dict"]))
    raw = text.replace(json.dumps(DEEP), deep_text(depth, kind)).encode()
    if draw(st.booleans()):
        return raw
    at = draw(st.integers(0, len(raw)))
    noise = draw(st.binary(max_size=12))
    return raw[:at] + noise + (raw[at:] if draw(st.booleans()) else b"")
