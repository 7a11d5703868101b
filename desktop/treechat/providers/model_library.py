"""Local models a person can download: the recommended list, the Hugging Face hub, and the
GGUF files already on disk under the data folder's `models/`.

Hub access goes through `huggingface_hub` (its API client, URLs, headers and `http_get`
transfer with Range resume and retries). `hf_hub_download` itself is not used: since
huggingface_hub 1.17 it writes each attempt to a process-unique temporary file and deletes
it on failure (huggingface/huggingface_hub#4196), so a download killed with the app would
start again from zero. Here each file downloads into one `<file>.part` beside a small
manifest that names the hub's sha256 and size; a later call, in this process or the next,
resumes from the bytes already there, and the bytes are checked against the hub's sha256
before the file takes its final name. What the library speaks of is in `model_records` (and
exported from here); receiving the bytes is in `model_download`.

Every call here blocks; the service runs them on worker threads.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, BinaryIO, cast

from .. import paths
from ..core.bounded_read import MB, Bounds
from ..core.clock import Clock
from .bounded_http import bounded_transport
from .gguf_header import GGUFError, GGUFHeader, read_header
from .model_download import CheckedWriter, Meter, NoBar, drop_if_empty
from .model_records import (
    ChecksumMismatch,
    DownloadControl,
    DownloadStopped,
    HubFile,
    HubRepo,
    InstalledModel,
    LibraryError,
    NotEnoughSpace,
    PartialDownload,
    Progress,
    RecommendedModel,
    TooMuchData,
)
from .network_words import failure_words

__all__ = [
    "ChecksumMismatch",
    "DownloadControl",
    "DownloadStopped",
    "HubFile",
    "HubRepo",
    "InstalledModel",
    "LibraryError",
    "ModelLibrary",
    "NotEnoughSpace",
    "PartialDownload",
    "Progress",
    "RecommendedModel",
    "TooMuchData",
    "model_name",
    "recommended",
    "safe_name",
    "size_text",
]

DEFAULT_ENDPOINT = "https://huggingface.co"
# A look at whether the hub answers at all, before the client's own retries (see `_api`).
REACH_TIMEOUT_S = 10.0
REACH_FRESH_S = 60.0
PART_SUFFIX = ".part"
MANIFEST_SUFFIX = ".json"
# Room kept free beyond the file itself, so a download never fills the disk to the last byte.
DISK_MARGIN_BYTES = 256 * 1024 * 1024
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


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

        bound_hub_answers()
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
        from huggingface_hub.utils import (  # type: ignore[attr-defined]  # not exported to mypy
            build_hf_headers,
        )

        bound_hub_answers()
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
        meter = Meter(remote.size, have, self._monotonic, on_progress)
        try:
            with part.open("ab") as raw:
                writer = CheckedWriter(raw, have, control, meter, remote.size,
                                        f"{repo}/{file}")
                writer.prime(part)
                # the writer is file-like and NoBar is tqdm-like: what http_get calls on them
                http_get(url, cast(BinaryIO, writer), resume_size=have, headers=headers,
                         expected_size=remote.size, tqdm_class=cast(Any, NoBar))
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
            drop_if_empty(part, manifest)
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


# What is read of the hub's answers: an API answer (a search, a repository's files) within
# HUB_API_BOUNDS, an error within HUB_ERROR_BOUNDS; a file's download has its own checks (the
# declared size, the sha256). huggingface_hub reads both whole: a hub answering an error
# without end grew `models search` past 20 GB.
HUB_API_BOUNDS = Bounds(cap=16 * MB, deadline=120.0)
HUB_ERROR_BOUNDS = Bounds(cap=256 * 1024, deadline=60.0)


def _hub_bounds(request: Any, response: Any) -> Bounds | None:
    if response is not None and response.status_code >= 400:
        return HUB_ERROR_BOUNDS
    return HUB_API_BOUNDS if request.url.path.startswith("/api/") else None


def _bounded_hub_client() -> Any:
    """huggingface_hub's own client, its transports (proxies' too) read within bounds. They
    are wrapped where the client keeps them: built with a transport of ours, it would no
    longer take the proxies the environment names."""
    import httpx2
    from huggingface_hub.utils import _http

    client = _http.default_client_factory()
    transport = getattr(client, "_transport", None)
    mounts = getattr(client, "_mounts", None)
    if transport is None or not isinstance(mounts, dict):  # another huggingface_hub
        return client
    client._transport = bounded_transport(httpx2, transport, _hub_bounds)
    client._mounts = {pattern: bounded_transport(httpx2, mounted, _hub_bounds)
                      if mounted is not None else None
                      for pattern, mounted in mounts.items()}
    return client


def bound_hub_answers() -> None:
    """Have huggingface_hub read the hub's answers within bounds (idempotent)."""
    import huggingface_hub

    if getattr(bound_hub_answers, "installed", False):
        return
    huggingface_hub.set_client_factory(_bounded_hub_client)
    bound_hub_answers.__dict__["installed"] = True
