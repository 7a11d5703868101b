"""Receiving one model file: the file `http_get` writes into (hashing as it goes, refusing
more bytes than the hub declared, stopping on pause or cancel), the meter that reports
progress, and the no-op bar `http_get` is handed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

from ..core.bounded_read import human_bytes
from .model_records import DownloadControl, Progress, TooMuchData

HASH_CHUNK = 4 * 1024 * 1024


class NoBar:
    """What `http_get` takes for a progress bar; the service reports progress itself."""

    def __init__(self, **_: Any) -> None:
        pass

    def __enter__(self) -> NoBar:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


class Meter:
    """Bytes done, speed over the last few seconds and time left, reported ~10 times a second."""

    def __init__(self, total: int, done: int, monotonic: Callable[[], float],
                 report: Callable[[Progress], None] | None) -> None:
        self.total = total
        self.done = done
        self._monotonic = monotonic
        self._report = report
        self._samples: list[tuple[float, int]] = [(monotonic(), done)]
        self._last = 0.0

    def add(self, n: int) -> None:
        self.done += n
        now = self._monotonic()
        if now - self._last >= 0.1:
            self._last = now
            self._emit(now)

    def finish(self) -> None:
        self._emit(self._monotonic())

    def _emit(self, now: float) -> None:
        self._samples.append((now, self.done))
        while len(self._samples) > 2 and now - self._samples[0][0] > 5.0:
            self._samples.pop(0)
        start, done0 = self._samples[0]
        span = now - start
        speed = (self.done - done0) / span if span > 0 else 0.0
        left = (self.total - self.done) / speed if speed > 0 else None
        if self._report is not None:
            self._report(Progress(self.done, self.total, speed, left))


class CheckedWriter:
    """The file `http_get` writes into: hashes as it goes, counts progress and stops the
    transfer when the user pauses or cancels."""

    def __init__(self, raw: BinaryIO, offset: int, control: DownloadControl,
                 meter: Meter, declared: int | None = None, name: str = "the file") -> None:
        self._declared = declared
        self._name = name
        self._raw = raw
        self._pos = offset
        self._control = control
        self._meter = meter
        self._hash = hashlib.sha256()
        self._dirty = False

    def prime(self, part: Path) -> None:
        """Hash the bytes a previous attempt left, so the end needs no second read."""
        if self._pos:
            with part.open("rb") as done:
                remaining = self._pos
                while remaining:
                    block = done.read(min(HASH_CHUNK, remaining))
                    if not block:
                        break
                    self._hash.update(block)
                    remaining -= len(block)

    def write(self, data: bytes) -> int:
        self._control.check()
        if self._declared is not None and self._pos + len(data) > self._declared:
            raise TooMuchData(
                f"the server sent more of {self._name} than the {human_bytes(self._declared)} "
                "the hub declared; the download was stopped and the partial file removed"
            )
        written = self._raw.write(data)
        self._hash.update(data)
        self._pos += len(data)
        self._meter.add(len(data))
        return written

    # http_get rewinds and truncates when a server ignores the Range header.
    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        self._dirty = True
        self._pos = self._raw.seek(offset, whence)
        return self._pos

    def truncate(self, size: int | None = None) -> int:
        self._dirty = True
        return self._raw.truncate(size)

    def hexdigest(self, part: Path) -> str:
        self._raw.flush()
        if not self._dirty:
            return self._hash.hexdigest()
        digest = hashlib.sha256()
        with part.open("rb") as done:
            while block := done.read(HASH_CHUNK):
                digest.update(block)
        return digest.hexdigest()


def drop_if_empty(part: Path, manifest: Path) -> None:
    """A download that failed before its first byte leaves nothing behind to resume."""
    try:
        if part.stat().st_size == 0:
            part.unlink()
            manifest.unlink(missing_ok=True)
    except OSError:
        pass
