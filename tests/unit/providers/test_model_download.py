"""Receiving a model file into a real `.part` file: the bytes are hashed as they come (with
the bytes a previous attempt left), more than the hub declared is refused, a pause stops the
transfer, and progress is reported with speed and time left."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from treechat.providers.model_download import CheckedWriter, Meter, drop_if_empty
from treechat.providers.model_records import (
    DownloadControl,
    DownloadStopped,
    Progress,
    TooMuchData,
)


class Ticks:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_resumed_file_is_hashed_whole_without_a_second_read(tmp_path: Path) -> None:
    part = tmp_path / "m.gguf.part"
    part.write_bytes(b"first half,")
    with part.open("ab") as raw:
        writer = CheckedWriter(raw, 11, DownloadControl(), Meter(22, 11, Ticks(), None), 22)
        writer.prime(part)
        writer.write(b"second half")
        assert writer.tell() == 22
        digest = writer.hexdigest(part)
    assert part.read_bytes() == b"first half,second half"
    assert digest == hashlib.sha256(b"first half,second half").hexdigest()


def test_a_rewound_file_is_hashed_again_from_disk(tmp_path: Path) -> None:
    part = tmp_path / "m.gguf.part"
    with part.open("w+b") as raw:
        writer = CheckedWriter(raw, 0, DownloadControl(), Meter(5, 0, Ticks(), None))
        writer.write(b"wrong")
        writer.seek(0)  # a server that ignored the Range header: start over
        writer.truncate()
        writer.write(b"right")
        digest = writer.hexdigest(part)
    assert digest == hashlib.sha256(b"right").hexdigest()


def test_more_bytes_than_declared_are_refused(tmp_path: Path) -> None:
    with (tmp_path / "p").open("wb") as raw:
        writer = CheckedWriter(raw, 0, DownloadControl(), Meter(4, 0, Ticks(), None), 4,
                               "org/m.gguf")
        writer.write(b"abcd")
        with pytest.raises(TooMuchData) as refused:
            writer.write(b"e")
    assert "more of org/m.gguf than the 4 bytes the hub declared" in str(refused.value)


def test_a_pause_stops_the_next_chunk_before_it_is_written(tmp_path: Path) -> None:
    part = tmp_path / "p"
    control = DownloadControl()
    with part.open("wb") as raw:
        writer = CheckedWriter(raw, 0, control, Meter(10, 0, Ticks(), None))
        writer.write(b"12345")
        control.pause()
        with pytest.raises(DownloadStopped):
            writer.write(b"67890")
    assert part.read_bytes() == b"12345"


def test_progress_is_reported_at_most_ten_times_a_second_with_speed_and_time_left() -> None:
    ticks, seen = Ticks(), []
    meter = Meter(1000, 0, ticks, seen.append)
    ticks.now = 1.0
    meter.add(100)
    meter.add(100)  # the same instant: not reported again
    ticks.now = 2.0
    meter.add(100)
    assert [p.done for p in seen] == [100, 300]
    last = seen[-1]
    assert last == Progress(300, 1000, 150.0, pytest.approx(700 / 150.0))
    meter.finish()
    assert len(seen) == 3


def test_a_download_that_wrote_nothing_leaves_nothing(tmp_path: Path) -> None:
    part, manifest = tmp_path / "m.part", tmp_path / "m.json"
    part.write_bytes(b"")
    manifest.write_text("{}")
    drop_if_empty(part, manifest)
    assert not part.exists() and not manifest.exists()
    part.write_bytes(b"x")
    manifest.write_text("{}")
    drop_if_empty(part, manifest)  # something to resume: kept
    assert part.exists() and manifest.exists()
    drop_if_empty(tmp_path / "never", manifest)  # no part at all: no error
