"""The store's errors: one family a caller can catch, with messages that name the file and
the way out."""

from __future__ import annotations

from pathlib import Path

from treechat.store.store_errors import (
    StoreCorruptError,
    StoreDamagedError,
    StoreError,
    StoreFullError,
    StoreLockedError,
    StoreTooNewError,
    damaged_message,
    disk_full_message,
    is_disk_full,
)


def test_every_store_error_is_caught_as_a_store_error() -> None:
    for kind in (StoreCorruptError, StoreDamagedError, StoreFullError, StoreTooNewError):
        assert issubclass(kind, StoreError)
    assert issubclass(StoreDamagedError, StoreCorruptError)
    assert StoreLockedError("in use").holder == "another process"
    assert StoreLockedError("in use", "process 7").holder == "process 7"


def test_a_damaged_store_is_described_with_both_ways_out() -> None:
    text = damaged_message(Path("/data/treechat.duckdb"), "block 3 cannot be read")
    assert text.startswith("The conversation store /data/treechat.duckdb is damaged: block 3")
    assert "will not write to it" in text
    assert "treechat backup restore NAME" in text and "treechat export SESSION" in text


def test_a_full_disk_is_recognised_in_either_wording() -> None:
    assert is_disk_full(OSError("IO Error: No space left on device"))
    assert is_disk_full(RuntimeError("Disk full while writing"))
    assert not is_disk_full(RuntimeError("Conflicting lock"))
    assert "Free some space" in disk_full_message(Path("/d/t.duckdb"))
