"""Any export, however damaged, gives conversations or one line (`ImportFileError`), never a
traceback and never more than a bounded amount of memory: each real fixture is damaged at
random (a value replaced by another of any shape, nested up to thousands deep, keys removed,
the text cut) and read again."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.peak_memory import peak_rss_mb

from treechat.core.imports import ImportFileError, ParsedExport, decode_json, parse_export

FIXTURES = sorted(
    p for p in (Path(__file__).parents[4] / "tests" / "data" / "imports").glob("*.json")
    if p.stat().st_size < 64_000
)
# What damaging and reading a fixture may add to this process's peak, in MB.
MEMORY_BOUND_MB = 300

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner,
                                                                 max_size=4),
    max_leaves=20,
)


def deep(depth: int, kind: str) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"a": value}
    return value


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            out.extend(paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            out.extend(paths(item, (*prefix, index)))
    return out


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return {**value, head: replaced(value[head], rest, new)}
    copy = list(value)
    copy[head] = replaced(copy[head], rest, new)
    return copy


def removed(value: Any, path: tuple[Any, ...]) -> Any:
    if len(path) == 1 and isinstance(value, dict):
        return {k: v for k, v in value.items() if k != path[0]}
    if len(path) == 1 and isinstance(value, list):
        return [v for i, v in enumerate(value) if i != path[0]]
    if not path:
        return value
    head = path[0]
    if isinstance(value, dict):
        return {**value, head: removed(value[head], path[1:])}
    copy = list(value)
    copy[head] = removed(copy[head], path[1:])
    return copy


def read(data: Any) -> None:
    try:
        result = parse_export(data)
    except ImportFileError as exc:
        assert "\n" not in str(exc).strip()
        return
    assert isinstance(result, ParsedExport)


@pytest.fixture(scope="module", autouse=True)
def within_memory_bound() -> Iterator[None]:
    """Every test here together adds at most `MEMORY_BOUND_MB` to the process's peak."""
    before = peak_rss_mb()
    yield
    assert peak_rss_mb() - before <= MEMORY_BOUND_MB


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    fixture=st.sampled_from(FIXTURES),
    choice=st.data(),
    new=json_values | st.builds(deep, st.integers(1, 3000), st.sampled_from(["list", "dict"])),
    drop=st.booleans(),
)
def test_a_damaged_export_is_read_or_refused_in_one_line(
    fixture: Path, choice: st.DataObject, new: Any, drop: bool
) -> None:
    data = json.loads(fixture.read_text(encoding="utf-8"))
    where = choice.draw(st.sampled_from(paths(data)))
    damaged = removed(data, where) if drop and where else replaced(data, where, new)
    read(damaged)


@settings(max_examples=100, deadline=None)
@given(fixture=st.sampled_from(FIXTURES), cut=st.floats(0.0, 1.0), junk=st.binary(max_size=16))
def test_a_cut_or_garbled_file_is_read_or_refused_in_one_line(
    fixture: Path, cut: float, junk: bytes
) -> None:
    raw = fixture.read_bytes()
    at = int(len(raw) * cut)
    try:
        data = decode_json(raw[:at] + junk + raw[at + len(junk):], fixture.name)
    except ImportFileError as exc:
        assert "\n" not in str(exc).strip()
        return
    read(data)


def test_metadata_nested_far_past_the_recursion_limit_is_refused_in_one_line() -> None:
    """200,000 lists deep inside one message: `parse_export` answers, with no RecursionError."""
    data = json.loads((Path(__file__).parents[4] / "tests" / "data" / "imports"
                       / "claude-tools-thinking.json").read_text(encoding="utf-8"))
    read(replaced(data, paths(data)[-1], deep(200_000, "list")))
