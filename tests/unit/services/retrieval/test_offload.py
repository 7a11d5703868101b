"""The indexing child process, real: it embeds as this process would, at a lower priority;
a file it cannot read comes back with why; if it dies its work is done here and the next job
starts a fresh one; idle, it stops."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from treechat.core.chunking import UNITS_PER_PASSAGE
from treechat.services.retrieval.engine import default_embedder
from treechat.services.retrieval.offload import NICENESS, Offload, embed_rows, read_files
from treechat.services.retrieval.units import embed_passages

ROWS = [(1, "Our boat is named Marigold. It is moored at the marina."),
        (2, "Remember to water the tomatoes before the weekend heat arrives.")]


@pytest.fixture
def offload() -> Iterator[Offload]:
    o = Offload(idle_seconds=600)
    yield o
    o.close()


def test_the_child_embeds_as_this_process_does_at_a_lower_priority(offload: Offload) -> None:
    keys, vectors = offload.run(embed_rows, "quick", ROWS)
    here_keys, here = embed_passages(default_embedder(), ROWS)
    assert keys == here_keys and {k // UNITS_PER_PASSAGE for k in keys} == {1, 2}
    assert np.allclose(vectors, here, atol=1e-5)
    pid = offload.run(os.getpid)
    assert pid != os.getpid()
    if hasattr(os, "getpriority"):
        mine = os.getpriority(os.PRIO_PROCESS, 0)
        assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, mine + NICENESS)


def test_files_are_read_cut_and_embedded_and_a_bad_one_says_why(offload: Offload,
                                                                 tmp_path: Path) -> None:
    note = tmp_path / "note.md"
    note.write_text("# Boats\n\nOur boat is named Marigold.\n\nThe shed key hangs by the door.\n")
    binary = tmp_path / "blob.txt"
    binary.write_bytes(b"\x00\x01\x02" * 10)
    good, bad = offload.run(read_files, [str(note), str(binary)])
    assert "Our boat is named Marigold" in good.passages[0][2]
    assert good.passages[-1] == (0, 5, "The shed key hangs by the door.\n")
    assert len(good.keys) == len(good.vectors) >= len(good.passages) and not good.error
    assert bad.path == str(binary) and "not a text file" in bad.error and not bad.passages


def test_a_child_that_dies_loses_no_work(offload: Offload) -> None:
    first = offload.run(os.getpid)
    os.kill(first, signal.SIGKILL)
    keys, vectors = offload.run(embed_rows, "quick", ROWS)  # done here: the child is gone
    assert {k // UNITS_PER_PASSAGE for k in keys} == {1, 2}
    assert vectors.shape == (len(keys), default_embedder().ndim)
    second = offload.run(os.getpid)
    assert second not in (first, os.getpid())


def test_an_idle_child_stops() -> None:
    offload = Offload(idle_seconds=0.01)
    offload.run(embed_rows, "quick", ROWS[:1])
    waited = 0.0
    while offload.started and waited < 60:
        time.sleep(0.05)
        waited += 0.05
    assert not offload.started
