"""AGENTS.md for the L1 prompt layer: read when present, re-read when it changes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from treechat.tools.workspace import WorkspaceInstructions


def test_missing_file_gives_no_instructions(tmp_path: Path) -> None:
    instructions = WorkspaceInstructions(tmp_path).read()
    assert instructions.text == "" and not instructions.present
    assert instructions.path == tmp_path / "AGENTS.md"


def test_change_is_picked_up_on_the_next_read(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("Use tabs.\n")
    reader = WorkspaceInstructions(tmp_path)
    assert reader.read().text == "Use tabs."
    agents.write_text("Use four spaces, never tabs.\n")
    assert reader.read().text == "Use four spaces, never tabs."


def test_same_size_edit_is_seen_through_mtime(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("rule A\n")
    os.utime(agents, ns=(1_000_000_000, 1_000_000_000))
    reader = WorkspaceInstructions(tmp_path)
    assert reader.read().text == "rule A"
    agents.write_text("rule B\n")
    os.utime(agents, ns=(2_000_000_000, 2_000_000_000))
    assert reader.read().text == "rule B"


def test_unchanged_file_is_not_read_again(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("keep\n")
    os.utime(agents, ns=(5_000_000_000, 5_000_000_000))
    reader = WorkspaceInstructions(tmp_path)
    first = reader.read()
    # Same bytes count and same mtime: the cached object comes back without touching the file.
    agents.write_text("KEEP\n")
    os.utime(agents, ns=(5_000_000_000, 5_000_000_000))
    assert reader.read() is first


def test_removed_file_clears_and_returning_file_is_read(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("one\n")
    reader = WorkspaceInstructions(tmp_path)
    assert reader.read().present
    agents.unlink()
    assert reader.read().text == ""
    agents.write_text("two\n")
    assert reader.read().text == "two"


def test_long_file_is_truncated_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * 50)
    got = WorkspaceInstructions(tmp_path, max_chars=10).read()
    assert got.text == "x" * 10 and got.truncated


@pytest.mark.asyncio
async def test_async_read(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("\ufeffBe brief.\n", encoding="utf-8")
    assert (await WorkspaceInstructions(tmp_path).aread()).text == "Be brief."


def test_a_huge_instructions_file_is_read_only_as_far_as_it_is_used(tmp_path: Path) -> None:
    import tracemalloc

    with (tmp_path / "AGENTS.md").open("wb") as fh:
        fh.write(b"Be brief. " * 100)
        fh.truncate(3 * 1024**3)  # sparse: three gigabytes that cost no disk
    tracemalloc.start()
    try:
        got = WorkspaceInstructions(tmp_path, max_chars=500).read()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert got.text.startswith("Be brief.") and len(got.text) == 500 and got.truncated
    assert peak < 1024**2
