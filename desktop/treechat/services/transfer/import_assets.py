"""The files an export carries for its messages, brought in as real attachments: a member of
the export zip (read through a cap on what it unpacks to, counted while it is read, so no
member is ever held past the cap), the text the source app extracted from a file, or bytes the
export holds inline. Each is checked by the attachment service's preparation and stored once by
its hash; the message then names it as any attachment sent from the composer is named, so the
context engine sends it and the window shows it. What is not in the export, or cannot be read,
stays a named placeholder, and the summary says why."""

from __future__ import annotations

import asyncio
import base64
import binascii
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from ...core.attachments import (
    IMAGE_TYPES,
    METADATA_KEY,
    PDF_TYPE,
    TEXT_TYPE,
    AttachmentError,
    human_size,
    safe_name,
)
from ...core.imports import ImportedConversation, ImportedMessage, Skipped
from ...core.imports._common import attachment_line
from ...core.tokens import TokenCounter
from ...store.database import Store
from ...store.imports import imported_messages
from ..attachments import AttachmentLimits, AttachmentService, prepare_bytes

__all__ = ["AssetCounts", "ExportAssets"]

_CHUNK = 1024 * 1024
_EXTENSIONS = {"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp",
               "image/gif": ".gif", PDF_TYPE: ".pdf", TEXT_TYPE: ".txt"}
# Text a source app extracted from a document is stored as text: named so that saving it back
# to disk does not give a text file a document's extension.
_DOCUMENT_SUFFIXES = frozenset({".pdf", ".doc", ".docx", ".odt", ".rtf", ".epub", ".xls",
                                ".xlsx", ".ods", ".ppt", ".pptx", ".odp", ".pages", ".key"})
# Keys of a placeholder that only carried the file to the importer.
_CARRIERS = ("placeholder", "data", "text", "zip_member")


@dataclass(slots=True)
class AssetCounts:
    """Attachments the written messages name: imported files, and placeholders that stayed."""

    imported: int = 0
    placeholders: int = 0

    def add(self, other: AssetCounts) -> None:
        self.imported += other.imported
        self.placeholders += other.placeholders


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What became of one file: the attachment entry a message gets (without its name), or
    why it stays a placeholder."""

    entry: dict[str, Any] | None
    reason: str = ""


class _TooLarge(Exception):
    pass


class _TotalReached(Exception):
    def __init__(self, limit: int) -> None:
        super().__init__(f"the export's files unpack to more than {human_size(limit)}, more "
                         "than any real export: Treechat reads no more of them")


class ExportAssets:
    """Brings in the files of one export file's conversations, one conversation at a time and
    one file at a time (a file's bytes are dropped once stored). The zip, when there is one,
    is opened on first use with a handle of its own, apart from the one the conversations are
    read through."""

    def __init__(
        self,
        store: Store,
        archive: Path | None,
        *,
        counter: Callable[[], TokenCounter],
        now: Callable[[], float],
        limits: AttachmentLimits | None = None,
        max_total_bytes: int,
    ) -> None:
        self._store = store
        self._archive_path = archive
        self._archive: zipfile.ZipFile | None = None
        self._counter = counter
        self._service: AttachmentService | None = None
        self._now = now
        self.limits = limits or AttachmentLimits()
        self._max_total = max_total_bytes
        self._unpacked = 0
        self._members: dict[str, _Outcome] = {}  # a zip member read once per import
        self._stored: set[str] = set()

    def close(self) -> None:
        if self._archive is not None:
            self._archive.close()
            self._archive = None

    async def bring_in(
        self, conversation: ImportedConversation
    ) -> tuple[ImportedConversation, list[Skipped], AssetCounts]:
        """`conversation` with the placeholders of the messages the store does not hold yet
        turned into attachments where the export carries the file; what stayed a placeholder
        for a reason other than absence is reported as skipped."""
        counts = AssetCounts()
        if not any(_placeholders(m) for m in conversation.nodes):
            return conversation, [], counts
        fmt, cid = conversation.source_format, conversation.source_id
        done = await self._store.run(lambda repo: imported_messages(repo, fmt, cid))
        skipped: list[Skipped] = []
        nodes: list[ImportedMessage] = []
        for message in conversation.nodes:
            if message.source_id in done or not _placeholders(message):
                nodes.append(message)
                continue
            entries: list[Any] = []
            lines: list[str] = []
            for raw in message.metadata.get(METADATA_KEY) or ():
                if not (isinstance(raw, dict) and raw.get("placeholder")):
                    entries.append(raw)
                    continue
                outcome = await self._outcome(raw) if _carried(raw, self._archive_path) else None
                if outcome is not None and outcome.entry is not None:
                    entries.append(_named(outcome.entry, raw))
                    lines.extend(_lines_of(raw))
                    counts.imported += 1
                    continue
                kept = {k: v for k, v in raw.items() if k != "data"}
                if outcome is not None:
                    kept["unreadable"] = outcome.reason
                    skipped.append(Skipped(
                        f"{raw.get('name') or 'a file'} stays a placeholder: {outcome.reason}",
                        message.source_id, conversation.title))
                entries.append(kept)
                counts.placeholders += 1
            metadata = {**message.metadata, METADATA_KEY: entries}
            nodes.append(replace(message, metadata=metadata,
                                 output=_without_lines(message.output, lines)))
        return replace(conversation, nodes=tuple(nodes)), skipped, counts

    async def _outcome(self, placeholder: dict[str, Any]) -> _Outcome:
        member = placeholder.get("zip_member")
        if isinstance(member, str) and member in self._members:
            return self._members[member]
        found = await asyncio.to_thread(self._prepare, placeholder)
        if isinstance(found, _Outcome):
            outcome = found
        else:
            entry, media, data = found
            sha = str(entry["sha256"])
            if sha not in self._stored:
                now = self._now()
                await self._store.run(lambda repo: repo.put_attachment(sha, media, data, now))
                self._stored.add(sha)
            del data
            outcome = _Outcome(entry)
        if isinstance(member, str):
            self._members[member] = outcome
        return outcome

    # --- on a worker thread -----------------------------------------------------------

    def _prepare(self, placeholder: dict[str, Any]) -> _Outcome | tuple[dict[str, Any], str,
                                                                         bytes]:
        name = str(placeholder.get("name") or "attachment")
        member = placeholder.get("zip_member")
        try:
            if isinstance(member, str) and self._archive_path is not None:
                data = self._read_member(member)
            elif isinstance(placeholder.get("data"), str) and placeholder["data"]:
                data = base64.b64decode(placeholder["data"], validate=True)
            else:
                data = str(placeholder.get("text") or "").encode("utf-8")
            if len(data) > self.limits.max_file_bytes:
                raise _TooLarge
            prepared = prepare_bytes(data, name, self.limits)
            extracted = bool(placeholder.get("text")) and not member and not placeholder.get(
                "data")
            expected = None if extracted else _expected_kind(placeholder)
            if expected is not None and prepared.kind != expected:
                # A detector finds "text" in nearly any few bytes; a file the export calls
                # an image or a PDF that is not one is broken, not text.
                kind, what = ("image", "an image") if expected == "image" else ("PDF", "a PDF")
                raise AttachmentError(f"{safe_name(name)} is not a readable {kind}: the "
                                      f"export calls it {what}, but its bytes are not one")
        except _TooLarge:
            return _Outcome(None, f"it is larger than {human_size(self.limits.max_file_bytes)}, "
                                  "more than a file can be")
        except _TotalReached as exc:
            return _Outcome(None, str(exc))
        except AttachmentError as exc:
            return _Outcome(None, str(exc))
        except (binascii.Error, ValueError):
            return _Outcome(None, "its inline data is not valid base64")
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            return _Outcome(None, f"it is damaged in the zip ({exc})")
        except (RuntimeError, NotImplementedError) as exc:  # encrypted, unknown compression
            return _Outcome(None, f"the zip cannot give it back ({exc})")
        if self._service is None:
            self._service = AttachmentService(self._store, self._counter(), limits=self.limits)
        (ref,) = self._service.refs([prepared])
        entry = {**prepared.meta(), **ref.as_meta()}
        entry["name"] = _file_name(name, ref.media_type, extracted)
        return entry, ref.media_type, prepared.data

    def _read_member(self, member: str) -> bytes:
        if self._archive is None:
            assert self._archive_path is not None
            self._archive = zipfile.ZipFile(self._archive_path)
        info = self._archive.getinfo(member)
        cap = self.limits.max_file_bytes
        if info.file_size > cap:  # what the zip says it unpacks to; checked again as read
            raise _TooLarge
        chunks: list[bytes] = []
        got = 0
        with self._archive.open(info) as stream:
            while piece := stream.read(min(_CHUNK, cap + 1 - got)):
                got += len(piece)
                self._unpacked += len(piece)
                if got > cap:
                    raise _TooLarge
                if self._unpacked > self._max_total:
                    raise _TotalReached(self._max_total)
                chunks.append(piece)
        return b"".join(chunks)


def _placeholders(message: ImportedMessage) -> bool:
    return any(isinstance(a, dict) and a.get("placeholder")
               for a in message.metadata.get(METADATA_KEY) or ())


def _carried(placeholder: dict[str, Any], archive: Path | None) -> bool:
    """Whether the export holds the file itself."""
    if isinstance(placeholder.get("zip_member"), str) and archive is not None:
        return True
    return bool(placeholder.get("data")) or bool(str(placeholder.get("text") or "").strip())


def _named(entry: dict[str, Any], placeholder: dict[str, Any]) -> dict[str, Any]:
    """The attachment entry for one message, keeping where the export had the file."""
    out = dict(entry)
    for key in ("ref", "source"):
        if key in placeholder:
            out[key] = placeholder[key]
    if isinstance(placeholder.get("zip_member"), str):
        out["zip_member"] = placeholder["zip_member"]
    for key in _CARRIERS:
        if key != "zip_member":
            out.pop(key, None)
    return out


_IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".webp", ".gif"})


def _expected_kind(placeholder: dict[str, Any]) -> str | None:
    """What the export says the file is ("image", "pdf"), from its kind, type or name."""
    mime = str(placeholder.get("mime_type") or "").lower()
    suffix = PurePosixPath(str(placeholder.get("name") or "")).suffix.lower()
    if placeholder.get("kind") == "image" or mime.startswith("image/") or \
            suffix in _IMAGE_SUFFIXES:
        return "image"
    if mime == PDF_TYPE or suffix == ".pdf":
        return "pdf"
    return None


def _file_name(name: str, media_type: str, extracted: bool) -> str:
    """The name the attachment is shown and saved under: the export's name, given the
    extension of what the bytes are when it has none (Grok keeps an upload as `content`)."""
    shown = safe_name(name)
    suffix = PurePosixPath(shown).suffix.lower()
    if extracted and media_type == TEXT_TYPE and suffix in _DOCUMENT_SUFFIXES:
        return f"{shown}.txt"
    if not suffix and media_type in _EXTENSIONS:
        return shown + _EXTENSIONS[media_type]
    if media_type in IMAGE_TYPES and suffix not in _IMAGE_SUFFIXES:
        return shown + _EXTENSIONS[media_type]
    return shown


def _lines_of(placeholder: dict[str, Any]) -> list[str]:
    """The lines a placeholder may have left in its message's text (`[image: NAME]`, named
    by the asset id before the zip gave it a file name)."""
    ref = str(placeholder.get("ref") or "")
    names = {str(placeholder.get("name") or ""), ref, ref.split("://", 1)[-1],
             str(placeholder.get("kind") or "file")}
    kind = placeholder.get("kind") or "file"
    return [attachment_line({"kind": kind, "name": n}) for n in names if n]


def _without_lines(output: Any, lines: list[str]) -> Any:
    """The message text without the placeholder lines of files now attached for real."""
    if not lines or not isinstance(output, str):
        return output
    drop = set(lines)
    kept = [line for line in output.split("\n") if line.strip() not in drop]
    return "\n".join(kept).strip("\n")
