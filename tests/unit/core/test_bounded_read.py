"""Reading outside bytes within a cap and a deadline: a file larger than the cap is refused
from its size, `/dev/zero` and an endless pipe stop at the cap, a FIFO nobody writes to and a
writer that falls silent stop at their time bound, each with one line naming the bound."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.bounded_read import (
    MB,
    Bounds,
    ByteBudget,
    ReadLimitError,
    read_fd,
    read_path,
)


def test_the_budget_names_the_bound_that_was_passed() -> None:
    budget = ByteBudget(Bounds(cap=10, deadline=5.0, idle=2.0), "the thing", now=100.0)
    budget.add(10, now=100.5)  # exactly the cap is allowed
    with pytest.raises(ReadLimitError) as over:
        budget.add(1, now=100.6)
    assert over.value.limit == "cap"
    assert str(over.value) == "the thing is larger than 10 bytes, the most that is read from it"

    quiet = ByteBudget(Bounds(cap=10, idle=2.0), "a pipe", now=0.0)
    quiet.tick(1.9)
    with pytest.raises(ReadLimitError, match=r"^a pipe sent nothing for 2 s") as idle:
        quiet.tick(2.1)
    assert idle.value.limit == "idle"

    slow = ByteBudget(Bounds(cap=100, deadline=5.0, idle=2.0), "a trickle", now=0.0)
    for t in (1.5, 3.0, 4.5):  # never silent for 2 s, but past 5 s in all
        slow.add(1, now=t)
    with pytest.raises(ReadLimitError, match=r"took longer than 5 s") as total:
        slow.add(1, now=6.0)
    assert total.value.limit == "deadline" and total.value.read == 4
    assert slow.wait_left(4.5) == pytest.approx(0.5)


def test_a_file_within_the_cap_is_read_whole(tmp_path: Path) -> None:
    path = tmp_path / "note.txt"
    path.write_bytes(b"hello\n" * 1000)
    assert read_path(path, Bounds(cap=6000)) == b"hello\n" * 1000


def test_a_sparse_file_far_over_the_cap_is_refused_before_a_byte_is_read(
    tmp_path: Path,
) -> None:
    path = tmp_path / "huge.txt"
    with path.open("wb") as f:
        f.truncate(5 * 1024**3)  # 5 GB of nothing on disk
    with pytest.raises(ReadLimitError) as refused:
        read_path(path, Bounds(cap=MB), "huge.txt")
    assert str(refused.value) == (
        "huge.txt is 5,120 MB, larger than 1 MB, the most that is read from it"
    )
    assert refused.value.read == 0


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero on this system")
def test_dev_zero_stops_at_the_cap() -> None:
    with pytest.raises(ReadLimitError) as refused:
        read_path("/dev/zero", Bounds(cap=2 * MB))
    assert refused.value.limit == "cap"
    assert refused.value.read <= 2 * MB + 1


def test_a_folder_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ReadLimitError, match="is a folder, not a file"):
        read_path(tmp_path, Bounds(cap=MB), "notes")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs on this system")
    path = tmp_path / "pipe"
    os.mkfifo(path)
    yield path


def test_a_fifo_no_program_writes_to_ends_at_its_time_bound(fifo: Path) -> None:
    with pytest.raises(ReadLimitError) as refused:
        read_path(fifo, Bounds(cap=MB, idle=0.3), "pipe")
    assert refused.value.limit == "deadline"
    assert str(refused.value) == "pipe is a pipe that no program wrote to within 0.3 s"


def test_a_fifo_whose_writer_comes_and_goes_is_read(fifo: Path) -> None:
    def write() -> None:
        with fifo.open("wb") as w:
            w.write(b"first ")
            w.flush()
            time.sleep(0.05)
            w.write(b"second")

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert read_path(fifo, Bounds(cap=MB, deadline=30.0, idle=10.0)) == b"first second"
    finally:
        writer.join()


def test_a_writer_that_falls_silent_ends_at_the_silence_bound() -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"a start and then nothing")
        with pytest.raises(ReadLimitError) as refused:
            read_fd(read_end, Bounds(cap=MB, idle=0.3), "standard input")
        assert refused.value.limit == "idle"
        assert refused.value.read == len(b"a start and then nothing")
    finally:
        os.close(read_end)
        os.close(write_end)


def test_an_endless_pipe_stops_at_the_cap() -> None:
    read_end, write_end = os.pipe()
    stop = threading.Event()

    def flood() -> None:
        block = b"y\n" * 32768
        try:
            while not stop.is_set():
                os.write(write_end, block)
        except OSError:  # the reader closed its end
            return

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    try:
        with pytest.raises(ReadLimitError) as refused:
            read_fd(read_end, Bounds(cap=4 * MB, deadline=60.0, idle=10.0), "standard input")
        assert refused.value.limit == "cap"
        assert str(refused.value).startswith("standard input is larger than 4 MB")
    finally:
        stop.set()
        os.close(read_end)
        writer.join(timeout=10)
        os.close(write_end)


def test_a_pipe_written_to_with_no_reader_is_given_up_on_in_words(tmp_path: Path) -> None:
    from treechat.core.bounded_read import WriteWaitError, write_path

    pipe = tmp_path / "out"
    os.mkfifo(pipe)
    with pytest.raises(WriteWaitError) as refused:  # a plain open would wait for ever
        write_path(pipe, b"x" * 10, deadline=0.2)
    assert refused.value.filename == str(pipe)
    assert "a pipe that no program read from within 0.2 s" in str(refused.value)


def test_a_pipe_with_a_reader_and_a_file_get_the_bytes_whole(tmp_path: Path) -> None:
    from treechat.core.bounded_read import write_path

    data = bytes(range(256)) * 4096  # 1 MB: more than a pipe holds at once
    pipe = tmp_path / "out"
    os.mkfifo(pipe)
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_bytes()))
    reader.start()
    write_path(pipe, data, deadline=60.0)
    reader.join(60)
    assert got == [data]
    write_path(tmp_path / "file.json", data)
    assert (tmp_path / "file.json").read_bytes() == data
