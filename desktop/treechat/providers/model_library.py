"""Local models a person can download: the recommended list, the Hugging Face hub, and the
GGUF files already on disk under the data folder's `models/`.

Hub access goes through `huggingface_hub` (its API client, URLs, headers and `http_get`
transfer with Range resume and retries). `hf_hub_download` itself is not used: since
huggingface_hub 1.17 it writes each attempt to a process-unique temporary file and deletes
it on failure (huggingface/huggingface_hub#4196), so a download killed with the app would
start again from zero. Here each file downloads into one `<file>.part` beside a small
manifest that names the hub's sha256 and size; a later call, in this process or the next,
resumes from the bytes already there, and the bytes are checked against the hub's sha256
before the file takes its final name.

Every call here blocks; the service runs them on worker threads.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

from .. import paths
from ..core.bounded_read import human_bytes
from ..core.clock import Clock
from .gguf_header import GGUFError, GGUFHeader, read_header
from .network_words import failure_words

DEFAULT_ENDPOINT = "https://huggingface.co"
# A look at whether the hub answers at all, before the client's own retries (see `_api`).
REACH_TIMEOUT_S = 10.0
REACH_FRESH_S = 60.0
PART_SUFFIX = ".part"
MANIFEST_SUFFIX = ".json"
# Room kept free beyond the file itself, so a download never fills the disk to the last byte.
DISK_MARGIN_BYTES = 256 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_HASH_CHUNK = 4 * 1024 * 1024


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


def recommended() -> tuple[RecommendedModel, ...]:
    data = json.loads(paths.resource("models", "recommended.json").read_text("utf-8"))
    return tuple(RecommendedModel(**entry) for entry in data["models"])


def safe_name(text: str) -> str:
    """A file-system-safe form of a hub name: never a path, never empty."""
    cleaned = _SAFE.sub("-", text).strip(".-")
    return cleaned[:120] or "model"


def model_name(repo: str, file: str) -> str:
    """The short name a downloaded model is known by (in the picker and on its server)."""
    stem = Path(file).name.removesuffix(".gguf")
    return safe_name(stem).lower()


class ModelLibrary:
    def __init__(
        self,
        models_dir: Path,
        *,
        endpoint: str | None = None,
        token: str | bool | None = None,
        free_space: Callable[[Path], int] | None = None,
        monotonic: Callable[[], float] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.models_dir = models_dir
        # Without a clock, the system's: when a model was added, and download speed.
        self._now: Callable[[], float] = clock.now if clock is not None else time.time
        self.endpoint = (endpoint or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
        self._token = token
        self._free_space = free_space or (lambda path: shutil.disk_usage(path).free)
        self._monotonic = monotonic or (clock.monotonic if clock is not None else time.monotonic)
        self._reached_at = -REACH_FRESH_S  # when the hub last answered (see `_reach`)

    # --- the hub -----------------------------------------------------------------------------

    def _api(self) -> Any:
        """The hub's client, once the hub has been seen to answer at all: huggingface_hub
        retries a refused or unresolvable connection five times with backoff (23 s before a
        search says the hub is unreachable), so one quick look decides that first."""
        self._reach()
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=self._token, library_name="treechat")

    def _reach(self) -> None:
        now = self._monotonic()
        if now - self._reached_at < REACH_FRESH_S:
            return
        import httpx

        try:  # any HTTP answer will do: the hub is there
            httpx.head(self.endpoint, timeout=REACH_TIMEOUT_S, follow_redirects=False)
        except httpx.HTTPError as exc:
            raise ConnectionError(_why(exc) or "no answer") from exc
        self._reached_at = now

    def hub_problem(self) -> str | None:
        """None when the hub answers; otherwise why not, in words, for a person."""
        try:
            self._reach()
        except ConnectionError as exc:
            return f"The model hub ({self.endpoint}) is not reachable: {exc}"
        return None

    def search(self, query: str, *, limit: int = 30) -> list[HubRepo]:
        """GGUF repositories on the hub matching `query`, most downloaded first."""
        query = query.strip()
        if not query:
            return []
        try:
            found = self._api().list_models(
                search=query[:200], filter="gguf", sort="downloads", limit=limit,
            )
            return [
                HubRepo(
                    repo=str(info.id), downloads=int(getattr(info, "downloads", 0) or 0),
                    likes=int(getattr(info, "likes", 0) or 0),
                    license=_license_of(info),
                )
                for info in found
            ]
        except Exception as exc:
            raise LibraryError(f"could not search the hub at {self.endpoint}: {_why(exc)}") from exc

    def files(self, repo: str) -> list[HubFile]:
        """The GGUF files of a repository with their sizes and sha256 from the hub."""
        try:
            info = self._api().model_info(repo, files_metadata=True)
        except Exception as exc:
            raise LibraryError(f"could not read {repo} on the hub: {_why(exc)}") from exc
        revision = str(getattr(info, "sha", None) or "main")
        out = []
        for sibling in getattr(info, "siblings", None) or ():
            name = str(sibling.rfilename)
            if not name.lower().endswith(".gguf"):
                continue
            lfs = getattr(sibling, "lfs", None)
            sha = getattr(lfs, "sha256", None) if lfs is not None else None
            size = getattr(lfs, "size", None) if lfs is not None else None
            out.append(HubFile(
                repo=repo, file=name, size=int(size or sibling.size or 0),
                sha256=str(sha) if sha else None, revision=revision,
            ))
        return sorted(out, key=lambda f: f.file)

    def file(self, repo: str, file: str) -> HubFile:
        for entry in self.files(repo):
            if entry.file == file:
                return entry
        raise LibraryError(f"{repo} has no file named {file!r}")

    # --- on disk -----------------------------------------------------------------------------

    def _target(self, repo: str, file: str) -> Path:
        name = Path(file).name
        if not name or name in (".", "..") or not name.lower().endswith(".gguf"):
            raise LibraryError(f"{file!r} is not a GGUF file name")
        return self.models_dir / safe_name(repo.replace("/", "--")) / safe_name(name)

    def _manifests(self) -> Iterator[tuple[Path, dict[str, Any]]]:
        if not self.models_dir.is_dir():
            return
        for manifest in sorted(self.models_dir.glob(f"*/*{MANIFEST_SUFFIX}")):
            try:
                data = json.loads(manifest.read_text("utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(data, dict):
                yield manifest, data

    def installed(self) -> list[InstalledModel]:
        out = []
        for _, data in self._manifests():
            if data.get("state") != "complete":
                continue
            with contextlib.suppress(TypeError, KeyError):
                model = InstalledModel(**data["model"])
                if Path(model.path).is_file():
                    out.append(model)
        return sorted(out, key=lambda m: m.name)

    def find(self, name: str) -> InstalledModel:
        for model in self.installed():
            if name in (model.name, model.file, f"{model.repo}/{model.file}"):
                return model
        raise LibraryError(f"no downloaded model named {name!r}")

    def partial(self) -> list[PartialDownload]:
        """Downloads that stopped before the end (paused, or the app closed or was killed)."""
        out = []
        for manifest, data in self._manifests():
            if data.get("state") != "partial":
                continue
            part = manifest.with_suffix(PART_SUFFIX)
            done = part.stat().st_size if part.exists() else 0
            out.append(PartialDownload(
                repo=str(data.get("repo", "")), file=str(data.get("file", "")),
                done=done, size=int(data.get("size", 0)),
            ))
        return out

    def add_file(self, path: Path) -> InstalledModel:
        """Register a GGUF file already on disk (it is run in place, never copied)."""
        path = path.expanduser().resolve()
        if not path.is_file():
            raise LibraryError(f"{path} is not a file")
        header = _header_or_error(path)
        target = self.models_dir / "local" / (safe_name(path.name) + MANIFEST_SUFFIX)
        model = InstalledModel(
            name=model_name("", path.name), repo="", file=path.name, path=str(path),
            size=path.stat().st_size, sha256=None, context_length=header.context_length,
            supports_tools=header.template_supports_tools, added_at=self._now(),
            kv_bytes_per_token=header.kv_bytes_per_token,
        )
        _write_json(target, {"state": "complete", "model": asdict(model)})
        return model

    def remove(self, name: str) -> int:
        """Delete a model's file (unless it was added from elsewhere on disk) and its
        manifest; returns the bytes freed."""
        model = self.find(name)
        freed = 0
        for manifest, data in list(self._manifests()):
            if data.get("model", {}).get("path") != model.path:
                continue
            if model.repo:
                with contextlib.suppress(FileNotFoundError):
                    freed += Path(model.path).stat().st_size
                    Path(model.path).unlink()
            manifest.unlink(missing_ok=True)
            with contextlib.suppress(OSError):
                manifest.parent.rmdir()  # only when empty
        return freed

    def discard_partial(self, repo: str, file: str) -> None:
        target = self._target(repo, file)
        target.with_name(target.name + PART_SUFFIX).unlink(missing_ok=True)
        target.with_name(target.name + MANIFEST_SUFFIX).unlink(missing_ok=True)

    # --- downloading -------------------------------------------------------------------------

    def download(
        self,
        repo: str,
        file: str,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        control: DownloadControl | None = None,
        hub_file: HubFile | None = None,
    ) -> InstalledModel:
        """Download (or resume) one GGUF file; returns it once its sha256 matched the hub's.

        Raises `DownloadStopped` on pause or cancel (a cancel removes the partial file),
        `NotEnoughSpace` before any byte is written, `ChecksumMismatch` when the bytes are
        not the hub's (the partial file is removed)."""
        from huggingface_hub import hf_hub_url
        from huggingface_hub.file_download import http_get
        from huggingface_hub.utils import (  # type: ignore[attr-defined]  # not in its __all__
            build_hf_headers,
        )

        control = control or DownloadControl()
        target = self._target(repo, file)  # refuses a name that is not a .gguf file first
        remote = hub_file or self.file(repo, file)
        if not remote.sha256:
            raise LibraryError(f"the hub gives no sha256 for {repo}/{file}; it cannot be checked")
        part = target.with_name(target.name + PART_SUFFIX)
        manifest = target.with_name(target.name + MANIFEST_SUFFIX)
        target.parent.mkdir(parents=True, exist_ok=True)
        previous = _read_json(manifest)
        if previous.get("sha256") != remote.sha256 or previous.get("state") != "partial":
            # Another version of the file (or no record of the bytes): start clean.
            part.unlink(missing_ok=True)
        have = part.stat().st_size if part.exists() else 0
        if have > remote.size:
            part.unlink()
            have = 0
        needed = remote.size - have + DISK_MARGIN_BYTES
        free = self._free_space(target.parent)
        if free < needed:
            raise NotEnoughSpace(
                f"{repo}/{file} needs {size_text(remote.size - have)} more, and only "
                f"{size_text(free)} is free on the disk holding {self.models_dir} (keeping "
                f"{size_text(DISK_MARGIN_BYTES)} spare)"
            )
        _write_json(manifest, {
            "state": "partial", "repo": repo, "file": file, "revision": remote.revision,
            "sha256": remote.sha256, "size": remote.size,
        })
        url = hf_hub_url(repo, file, revision=remote.revision, endpoint=self.endpoint)
        headers = build_hf_headers(token=self._token, library_name="treechat")
        meter = _Meter(remote.size, have, self._monotonic, on_progress)
        try:
            with part.open("ab") as raw:
                writer = _CheckedWriter(raw, have, control, meter, remote.size,
                                        f"{repo}/{file}")
                writer.prime(part)
                # the writer is file-like and _NoBar is tqdm-like: what http_get calls on them
                http_get(url, writer, resume_size=have, headers=headers,  # type: ignore[arg-type]
                         expected_size=remote.size, tqdm_class=_NoBar)
                digest = writer.hexdigest(part)
        except DownloadStopped as stop:
            if stop.cancelled:
                self.discard_partial(repo, file)
            raise
        except TooMuchData:
            self.discard_partial(repo, file)
            raise
        except LibraryError:
            raise
        except Exception as exc:
            _drop_if_empty(part, manifest)
            raise LibraryError(f"the download of {repo}/{file} failed: {_why(exc)}") from exc
        meter.finish()
        if digest != remote.sha256:
            self.discard_partial(repo, file)
            raise ChecksumMismatch(
                f"{repo}/{file} does not match the hub's checksum (got sha256 {digest[:12]}…, "
                f"expected {remote.sha256[:12]}…); the file was removed"
            )
        os.replace(part, target)
        header = _header_or_error(target)
        model = InstalledModel(
            name=model_name(repo, file), repo=repo, file=file, path=str(target),
            size=remote.size, sha256=digest, context_length=header.context_length,
            supports_tools=header.template_supports_tools, added_at=self._now(),
            kv_bytes_per_token=header.kv_bytes_per_token,
        )
        _write_json(manifest, {"state": "complete", "model": asdict(model)})
        return model


# --- helpers ---------------------------------------------------------------------------------


class _NoBar:
    """What `http_get` takes for a progress bar; the service reports progress itself."""

    def __init__(self, **_: Any) -> None:
        pass

    def __enter__(self) -> _NoBar:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def update(self, n: int = 1) -> None:
        return None

    def close(self) -> None:
        return None


class _Meter:
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


class _CheckedWriter:
    """The file `http_get` writes into: hashes as it goes, counts progress and stops the
    transfer when the user pauses or cancels."""

    def __init__(self, raw: BinaryIO, offset: int, control: DownloadControl,
                 meter: _Meter, declared: int | None = None, name: str = "the file") -> None:
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
                    block = done.read(min(_HASH_CHUNK, remaining))
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
            while block := done.read(_HASH_CHUNK):
                digest.update(block)
        return digest.hexdigest()


def _drop_if_empty(part: Path, manifest: Path) -> None:
    """A download that failed before its first byte leaves nothing behind to resume."""
    try:
        if part.stat().st_size == 0:
            part.unlink()
            manifest.unlink(missing_ok=True)
    except OSError:
        pass


def _header_or_error(path: Path) -> GGUFHeader:
    try:
        return read_header(path)
    except (GGUFError, OSError) as exc:
        raise LibraryError(f"{path.name} is not a usable GGUF model: {exc}") from exc


def _license_of(info: Any) -> str | None:
    card = getattr(info, "card_data", None) or getattr(info, "cardData", None)
    if card is not None:
        value = card.get("license") if hasattr(card, "get") else getattr(card, "license", None)
        if value:
            return str(value)
    for tag in getattr(info, "tags", None) or ():
        if str(tag).startswith("license:"):
            return str(tag).split(":", 1)[1]
    return None


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text("utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1), "utf-8")
    os.replace(tmp, path)


def size_text(n: int) -> str:
    """A model file's size as the library shows it everywhere: "1.1 GB", "98 MB"."""
    return f"{n / 1e9:.1f} GB" if n >= 1e9 else f"{n / 1e6:,.0f} MB"


def _why(exc: BaseException) -> str:
    if isinstance(exc, KeyError) and exc.args:  # huggingface_hub reads a field the hub left out
        return f"the hub's answer lacks the field {exc.args[0]!r}, so it cannot be trusted"
    if isinstance(exc, (RecursionError, MemoryError)):
        return "the hub's answer is malformed (nested too deep or too large to read)"
    return failure_words(exc)
