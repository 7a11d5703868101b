"""The clock a caller is handed: wall time for what is stored, monotonic time for intervals,
and a sleep of the clock's own time. A lower layer reads the time only through it."""

from __future__ import annotations

import inspect
import struct
from pathlib import Path

from tests.support.clock import DEFAULT_START, FakeClock
from tests.unit.providers.test_gguf_header import _header, _string

from treechat.core.clock import Clock
from treechat.providers.model_library import ModelLibrary


def test_a_clock_is_now_monotonic_and_an_awaitable_sleep() -> None:
    members = {name for name, _ in inspect.getmembers(Clock, inspect.isfunction)}
    assert {"now", "monotonic", "sleep"} <= members
    assert inspect.iscoroutinefunction(Clock.sleep)
    assert not inspect.iscoroutinefunction(Clock.now)


def test_what_is_stored_is_stamped_with_the_clock_it_was_handed(tmp_path: Path) -> None:
    model = tmp_path / "tiny.gguf"
    model.write_bytes(_header([("general.architecture", 8, _string("llama")),
                               ("llama.context_length", 4, struct.pack("<I", 2048))]))
    clock: Clock = FakeClock()
    library = ModelLibrary(tmp_path / "models", clock=clock)
    assert library.add_file(model).added_at == DEFAULT_START
    assert isinstance(clock, FakeClock)
    clock.advance(90.0)
    assert library.add_file(model).added_at == DEFAULT_START + 90.0
    assert [m.added_at for m in library.installed()] == [DEFAULT_START + 90.0]
