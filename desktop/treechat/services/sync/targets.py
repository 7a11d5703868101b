"""Where segments are kept: a folder (carried by the user's own sync tool or a network share)
or a WebDAV server. A target stores whole files under relative paths; anything S3-like can
follow by implementing `SyncTarget`. Calls block: run them off the event loop."""

from __future__ import annotations

import io
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import httpx

from ...core.bounded_read import MB, Bounds, ReadLimitError, read_path
from ...providers import bounded_http as http_bounds

# A file being written carries this in its name until it is whole; readers skip it.
PARTIAL = ".part-"

# What is read from a target, which anyone with write access to the folder or the server can
# fill: one file (a segment holds at most a few hundred chats' records, a blob one
# attachment), and one answer that is not a file (a WebDAV listing, a move).
FILE_BOUNDS = Bounds(cap=256 * MB, deadline=600.0, idle=60.0)
ANSWER_BOUNDS = Bounds(cap=16 * MB, deadline=120.0, idle=60.0)


class TargetError(Exception):
    """The target cannot be reached or refused a request (one line for the user)."""


class FileRefused(Exception):
    """One file on the target cannot be taken (larger than any Treechat writes, a pipe, a
    device, too slow): that file is passed over, the sync goes on."""


@dataclass(frozen=True, slots=True)
class StoredFile:
    path: str  # relative, with "/" separators
    size: int


class SyncTarget(Protocol):
    def describe(self) -> str:
        """Where this is, for the user (never with a password)."""
        ...

    def read(self, path: str) -> bytes | None:
        """The file's bytes, or None when there is no such file."""
        ...

    def write(self, path: str, data: bytes) -> None:
        """Store `data` whole under `path`: a reader sees the old file, the new one or none,
        never a part (written aside, then renamed)."""
        ...

    def list(self, folder: str) -> list[StoredFile]:
        """Every finished file under `folder`, recursively; [] when it does not exist."""
        ...

    def remove(self, path: str) -> None:
        ...

    def close(self) -> None:
        """Let go of connections (a folder has none)."""
        ...


class FolderTarget:
    def __init__(self, root: Path) -> None:
        self.root = root

    def describe(self) -> str:
        return str(self.root)

    def _path(self, path: str) -> Path:
        return self.root.joinpath(*path.split("/"))

    def read(self, path: str) -> bytes | None:
        try:
            return read_path(self._path(path), FILE_BOUNDS)
        except FileNotFoundError:
            return None
        except ReadLimitError as exc:
            raise FileRefused(str(exc)) from None
        except OSError as exc:
            raise TargetError(f"cannot read {self._path(path)}: {exc.strerror or exc}") from None

    def write(self, path: str, data: bytes) -> None:
        final = self._path(path)
        aside = final.with_name(final.name + PARTIAL + secrets.token_hex(4))
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
            with open(aside, "wb") as out:
                out.write(data)
                out.flush()
                os.fsync(out.fileno())
            os.replace(aside, final)
        except OSError as exc:
            aside.unlink(missing_ok=True)
            raise TargetError(f"cannot write {final}: {exc.strerror or exc}") from None

    def list(self, folder: str) -> list[StoredFile]:
        base = self._path(folder)
        if not base.is_dir():
            if not self.root.is_dir():
                raise TargetError(f"the sync folder {self.root} is not there")
            return []
        out: list[StoredFile] = []
        for dirpath, _, names in os.walk(base):
            for name in names:
                if PARTIAL in name:
                    continue
                full = Path(dirpath) / name
                rel = full.relative_to(self.root).as_posix()
                try:
                    out.append(StoredFile(rel, full.stat().st_size))
                except FileNotFoundError:
                    continue
        return sorted(out, key=lambda f: f.path)

    def remove(self, path: str) -> None:
        self._path(path).unlink(missing_ok=True)

    def close(self) -> None:
        return None


class WebDavTarget:
    """A WebDAV collection (Nextcloud, ownCloud, a NAS, Apache mod_dav) through webdav4."""

    def __init__(self, url: str, user: str = "", password: str = "", *,
                 timeout: float = 30.0) -> None:
        from webdav4.client import Client

        self.url = url.rstrip("/")
        auth = (user, password) if user else None
        # every answer read within its bounds
        self._client: Any = Client(
            self.url, auth=auth, timeout=timeout, retry=False,
            transport=bounded_transport(httpx.HTTPTransport()),
        )
        self._folders: set[str] = set()

    def describe(self) -> str:
        return self.url

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        from webdav4.client import ClientError, HTTPError

        try:
            return fn(*args, **kwargs)
        except ReadLimitError as exc:
            raise FileRefused(str(exc)) from None
        except HTTPError as exc:
            status = getattr(getattr(exc, "response", None), "status_code", "")
            raise TargetError(f"{self.url}: {what} refused ({status or exc})") from None
        except (ClientError, httpx.HTTPError, OSError) as exc:
            raise TargetError(f"{self.url}: cannot {what} ({type(exc).__name__}: {exc})"
                              ) from None

    def read(self, path: str) -> bytes | None:
        from webdav4.client import ResourceNotFound

        buffer = io.BytesIO()
        try:
            self._call(f"read {path}", self._client.download_fileobj, path, buffer)
        except TargetError as exc:
            if isinstance(exc.__context__, ResourceNotFound) or "404" in str(exc):
                return None
            raise
        return buffer.getvalue()

    def _mkdirs(self, folder: str) -> None:
        parts = [p for p in folder.split("/") if p]
        for i in range(1, len(parts) + 1):
            sub = "/".join(parts[:i])
            if sub in self._folders:
                continue
            if not self._call(f"look at {sub}", self._client.exists, sub):
                self._call(f"make {sub}", self._client.mkdir, sub)
            self._folders.add(sub)

    def write(self, path: str, data: bytes) -> None:
        folder = path.rpartition("/")[0]
        if folder:
            self._mkdirs(folder)
        aside = f"{path}{PARTIAL}{secrets.token_hex(4)}"
        self._call(f"write {path}", self._client.upload_fileobj, io.BytesIO(data), aside,
                   overwrite=True, size=len(data))
        self._call(f"write {path}", self._client.move, aside, path, overwrite=True)

    def list(self, folder: str) -> list[StoredFile]:
        from webdav4.client import ResourceNotFound

        out: list[StoredFile] = []
        pending = [folder]
        while pending:
            current = pending.pop()
            try:
                entries = self._client.ls(current, detail=True)
            except ResourceNotFound:
                continue
            except ReadLimitError as exc:  # a listing no server of files sends
                raise TargetError(f"{self.url}: cannot list {current} ({exc})") from None
            except Exception:  # the same failures `_call` words for the user
                entries = self._call(f"list {current}", self._client.ls, current, detail=True)
            for entry in entries:
                name = str(entry["name"]).strip("/")
                if entry.get("type") == "directory":
                    pending.append(name)
                elif PARTIAL not in name:
                    out.append(StoredFile(name, int(entry.get("content_length") or 0)))
        return sorted(out, key=lambda f: f.path)

    def remove(self, path: str) -> None:
        self._call(f"remove {path}", self._client.remove, path)

    def close(self) -> None:
        self._client.http.close()


def _target_bounds(request: httpx.Request, _response: httpx.Response | None) -> Bounds:
    return FILE_BOUNDS if request.method == "GET" else ANSWER_BOUNDS


def bounded_transport(inner: httpx.BaseTransport) -> httpx.BaseTransport:
    """The transport a WebDAV target reads through: a GET's answer (a file) within
    `FILE_BOUNDS`, anything else's within `ANSWER_BOUNDS`."""
    transport: httpx.BaseTransport = http_bounds.bounded_transport(httpx, inner, _target_bounds)
    return transport
