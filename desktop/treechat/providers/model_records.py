"""What the model library speaks of: its errors, the recommended models, what the hub lists,
a model on disk, a download left half done, and a download's progress and controls."""

from __future__ import annotations

import threading
from dataclasses import dataclass


class LibraryError(RuntimeError):
    """A model could not be listed, downloaded or removed; the message says why."""


class NotEnoughSpace(LibraryError):
    pass


class ChecksumMismatch(LibraryError):
    pass


class TooMuchData(LibraryError):
    """The server sent more bytes than the hub declared for the file."""


class DownloadStopped(LibraryError):
    """Paused or cancelled on request."""

    def __init__(self, cancelled: bool) -> None:
        super().__init__("download cancelled" if cancelled else "download paused")
        self.cancelled = cancelled


@dataclass(frozen=True)
class RecommendedModel:
    id: str
    title: str
    repo: str
    file: str
    size_bytes: int
    ram_gb: float
    context: int
    license: str
    tools: bool
    summary: str


@dataclass(frozen=True)
class HubRepo:
    repo: str
    downloads: int
    likes: int
    license: str | None


@dataclass(frozen=True)
class HubFile:
    repo: str
    file: str
    size: int
    sha256: str | None
    revision: str


@dataclass(frozen=True)
class InstalledModel:
    """A GGUF file on disk that the app can run."""

    name: str          # the library's short name, also the model's name on its server
    repo: str          # hub repository, or "" for a file the user added from disk
    file: str
    path: str
    size: int
    sha256: str | None
    context_length: int | None
    supports_tools: bool
    added_at: float
    kv_bytes_per_token: int | None = None


@dataclass(frozen=True)
class PartialDownload:
    repo: str
    file: str
    done: int
    size: int


@dataclass(frozen=True)
class Progress:
    done: int
    total: int
    bytes_per_second: float
    seconds_left: float | None

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


class DownloadControl:
    """Pause or cancel a download from another thread; checked between received chunks."""

    def __init__(self) -> None:
        self._pause = threading.Event()
        self._cancel = threading.Event()

    def pause(self) -> None:
        self._pause.set()

    def cancel(self) -> None:
        self._cancel.set()

    def check(self) -> None:
        if self._cancel.is_set():
            raise DownloadStopped(cancelled=True)
        if self._pause.is_set():
            raise DownloadStopped(cancelled=False)
