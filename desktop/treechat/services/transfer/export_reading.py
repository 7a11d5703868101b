"""Reading an export file into parsed conversations, a conversation at a time for large files
(`ijson`), so memory stays bounded by the largest conversation, not the file. Zip members are
read through a cap on the bytes they unpack to, checked as they are read, so a zip bomb is
refused before it fills memory. Everything here blocks: callers run it in a thread."""

from __future__ import annotations

import re
import sys
import threading
import zipfile
from collections.abc import Callable, Generator, Iterator
from pathlib import Path, PurePosixPath
from typing import IO, Any

import ijson

from ...core.imports import (
    ImportFileError,
    ParsedExport,
    Skipped,
    decode_json,
    parse_export,
    unreadable_value,
)
from ...core.imports.detect import KNOWN, SAMPLE, probe_format

# Generous: a decade of heavy ChatGPT use exports to a few hundred MB. The cap is on what the
# file (or every member read from a zip) unpacks to, counted while reading.
MAX_EXPORT_BYTES = 2 * 1024**3
# What the files an export carries for its messages (images, uploads) may unpack to together,
# counted apart from its conversations, each file within the attachment cap as well.
MAX_EXPORT_FILES_BYTES = MAX_EXPORT_BYTES
# One conversation's JSON text; a whole file that is one object (Treechat, LibreChat, AI
# Studio) counts as one conversation.
MAX_CONVERSATION_BYTES = 128 * 1024**2
# Files up to this size are parsed in one go: `json.loads` is faster than an incremental
# parser, and what it holds in memory is a small multiple of this.
WHOLE_FILE_BYTES = 32 * 1024**2

_CHUNK = 256 * 1024
# Members of an export zip that hold conversations: `conversations.json`, today's split
# `conversations-000.json`, …, and Grok's `prod-grok-backend.json`.
_MEMBER = re.compile(r"^(conversations(?:[-_]\d+)?|prod-grok-backend)\.json$", re.IGNORECASE)
_GROK_WRAPPER = re.compile(rb'^\{\s*"conversations"\s*:\s*\[')



def read_export(path: Path) -> ParsedExport:
    """Read and parse a whole export file (blocking: call it in a thread). For large files
    prefer `read_export_parts`, which holds one conversation at a time."""
    parts = list(read_export_parts(path))
    fmt = next((p.source_format for p in parts if p.source_format), "")
    return ParsedExport(
        fmt,
        tuple(c for p in parts for c in p.conversations),
        tuple(s for p in parts for s in p.skipped),
    )


def read_export_parts(
    path: Path,
    *,
    max_bytes: int = MAX_EXPORT_BYTES,
    max_conversation_bytes: int = MAX_CONVERSATION_BYTES,
    whole_file_bytes: int = WHOLE_FILE_BYTES,
    on_bytes: Callable[[int, int], None] | None = None,
) -> Iterator[ParsedExport]:
    """Read an export file (or every conversations file of a zip) as a stream of parsed
    parts, one conversation per part for large files (blocking: run it in a thread).

    Raises `ImportFileError` when the file is unusable before anything was read from it; a
    file that breaks off later yields what came before and ends with a skip saying why."""
    for part, _streamed in parts_of(
        Path(path), max_bytes=max_bytes, max_conversation_bytes=max_conversation_bytes,
        whole_file_bytes=whole_file_bytes, on_bytes=on_bytes,
    ):
        yield part


Part = tuple[ParsedExport, bool]  # a parsed part, and whether it came from a streamed list


def parts_of(
    path: Path,
    *,
    max_bytes: int = MAX_EXPORT_BYTES,
    max_conversation_bytes: int = MAX_CONVERSATION_BYTES,
    whole_file_bytes: int = WHOLE_FILE_BYTES,
    on_bytes: Callable[[int, int], None] | None = None,
) -> Generator[Part, None, None]:
    try:
        if not path.is_file():
            raise ImportFileError(f"{path} is not a file.")
        size = path.stat().st_size
        if size > max_bytes:
            raise ImportFileError(f"{path.name} is larger than {_size(max_bytes)}.")
        budget = _Budget(max_bytes, path.name, on_bytes)
        if zipfile.is_zipfile(path):
            yield from _zip_parts(path, budget, max_conversation_bytes, whole_file_bytes)
            return
        with path.open("rb") as raw:
            budget.total = size
            yield from _source_parts(
                raw, path.name, size, budget, max_conversation_bytes, whole_file_bytes
            )
    except OSError as exc:
        raise ImportFileError(f"{path} cannot be read: {exc.strerror or exc}") from None


def _size(n: int) -> str:
    return f"{n >> 30} GB" if n >= 1 << 30 else f"{n >> 20} MB"


class _Budget:
    """Bytes read so far across every member of one file, refused past `limit`."""

    def __init__(self, limit: int, name: str, report: Callable[[int, int], None] | None):
        self.limit = limit
        self.name = name
        self.used = 0
        self.total = 0
        self.report = report

    def spend(self, n: int) -> None:
        self.used += n
        if self.used > self.limit:
            raise _Refused(
                f"{self.name} unpacks to more than {_size(self.limit)}, more than any real "
                "chat export: Treechat does not import it."
            )
        if self.report is not None:
            self.report(self.used, self.total)


class _Refused(Exception):
    """Reading stopped on purpose (a cap was reached); the message is for the user."""


class _Counted:
    """A binary reader that counts what it hands out against the file's budget and against
    the size of the conversation being read (bytes since `mark`), so a hostile file is
    stopped while it is read, not after it has been held in memory."""

    def __init__(self, raw: IO[bytes], budget: _Budget, item_limit: int, name: str) -> None:
        self.raw = raw
        self.budget = budget
        self.item_limit = item_limit
        self.name = name
        self.pos = 0
        self.marked = 0
        self.pending = b""

    def peek(self, n: int) -> bytes:
        while len(self.pending) < n:
            more = self.raw.read(n - len(self.pending))
            if not more:
                break
            self.pending += more
        return self.pending[:n]

    def read(self, n: int = -1) -> bytes:
        if n is None or n < 0:
            n = _CHUNK
        elif n > 0:
            # The parser scans a token that spans reads again on every read, so one huge
            # string read in fixed pieces costs time quadratic in its length: reads grow with
            # the conversation being read, which keeps it linear (and within the cap).
            n = max(n, (self.pos - self.marked) // 4)
        if self.pending:
            data, self.pending = self.pending[:n], self.pending[n:]
        else:
            data = self.raw.read(n)
        self.pos += len(data)
        self.budget.spend(len(data))
        if self.pos - self.marked > self.item_limit:
            raise _Refused(
                f"a conversation in {self.name} is larger than {_size(self.item_limit)}: "
                "Treechat does not import a single conversation that large."
            )
        return data

    def mark(self) -> None:
        self.marked = self.pos

    def read_all(self) -> bytes:
        chunks: list[bytes] = []
        while data := self.read(_CHUNK):
            chunks.append(data)
        return b"".join(chunks)


def _zip_parts(
    path: Path, budget: _Budget, item_limit: int, whole_file_bytes: int
) -> Iterator[Part]:
    try:
        with zipfile.ZipFile(path) as archive:
            members = [
                info for info in archive.infolist()
                if not info.is_dir() and _MEMBER.match(PurePosixPath(info.filename).name)
            ]
            if not members:
                raise ImportFileError(
                    f"{path.name} is a zip without a conversations.json in it. Choose the zip "
                    "the app's data export gave you, or the JSON file itself."
                )
            # The shallowest folder holding conversations wins (an export zip sometimes
            # carries an older export inside it); its files are read in name order.
            depth = min(m.filename.count("/") for m in members)
            members = sorted((m for m in members if m.filename.count("/") == depth),
                             key=lambda m: m.filename)
            declared = sum(m.file_size for m in members)
            if declared > budget.limit:
                raise ImportFileError(
                    f"{path.name} unpacks to more than {_size(budget.limit)}, more than any "
                    "real chat export: Treechat does not import it."
                )
            budget.total = declared
            assets = _asset_members(archive)
            for info in members:
                with archive.open(info) as member:
                    for part, streamed in _source_parts(
                        member, f"{path.name}/{info.filename}", info.file_size, budget,
                        item_limit, whole_file_bytes,
                    ):
                        if assets:
                            _name_assets(part, assets)
                        yield part, streamed
    except zipfile.BadZipFile as exc:
        raise ImportFileError(f"{path.name} is a damaged zip file: {exc}") from None


def _asset_key(member: str) -> str:
    """The asset id a zip member holds: ChatGPT names files `file-<id>-<name>` (older) or
    `file_<id>-<uuid>.<ext>`; Grok keeps each upload as `<asset id>/content`."""
    name = PurePosixPath(member)
    if name.name == "content" and name.parent.name:
        return name.parent.name
    if name.name.startswith("file_"):
        return name.name.split("-", 1)[0].split(".", 1)[0]
    return "-".join(name.name.split("-", 2)[:2]).split(".", 1)[0]


def _asset_members(archive: zipfile.ZipFile) -> dict[str, str]:
    return {
        _asset_key(info.filename): info.filename for info in archive.infolist()
        if not info.is_dir() and not info.filename.endswith((".json", ".html"))
    }


def _name_assets(part: ParsedExport, assets: dict[str, str]) -> None:
    """Point attachment placeholders at the file the zip carries for them (`zip_member`), so
    they can be upgraded to the file itself, and name them by its real file name."""
    for conversation in part.conversations:
        for message in conversation.nodes:
            for att in message.metadata.get("attachments") or ():
                ref = str(att.get("ref") or "") if isinstance(att, dict) else ""
                asset = ref.split("://", 1)[-1]
                member = assets.get(asset) if ref else None
                if member is not None:
                    att["zip_member"] = member
                    if att.get("name") in ("", asset, ref):
                        att["name"] = _member_file_name(member, asset)


def _member_file_name(member: str, asset: str) -> str:
    """A zip member's file name without the asset id ChatGPT puts in front of it
    (`file-<id>-chart.png` is chart.png); Grok's `<id>/content` keeps the id."""
    name = PurePosixPath(member).name
    if name == "content":
        return asset
    if name.startswith(asset + "-") and len(name) > len(asset) + 1 and asset.startswith("file-"):
        return name[len(asset) + 1:]
    return name


def _source_parts(
    raw: IO[bytes], name: str, size: int, budget: _Budget, item_limit: int,
    whole_file_bytes: int,
) -> Iterator[Part]:
    reader = _Counted(raw, budget, max(item_limit, whole_file_bytes), name)
    # (the limit for one piece is lowered to `item_limit` once the shape is known)
    head = reader.peek(64 * 1024)
    if head.startswith(b"\xef\xbb\xbf"):
        reader.pending = reader.pending[3:]
        head = head[3:]
    start = head.lstrip()
    streamed_prefix: str | None = None
    fmt: str | None = None
    if size > whole_file_bytes:
        if start.startswith(b"["):
            streamed_prefix = "item"
        elif _GROK_WRAPPER.match(start):
            streamed_prefix, fmt = "conversations.item", "grok"
    if streamed_prefix is None:
        if size > item_limit:
            raise ImportFileError(
                f"{name} is too large to read as one conversation ({_size(size)}; Treechat "
                f"reads up to {_size(item_limit)} in one piece)."
            )
        try:
            raw_text = reader.read_all()
        except _Refused as exc:
            raise ImportFileError(str(exc)) from None
        try:
            data = decode_json(raw_text, name)
        except RecursionError:
            data = _decode_deep(raw_text, name)
        del raw_text
        yield parse_export(data), False
        return
    reader.item_limit = item_limit
    yield from _stream_items(reader, name, streamed_prefix, fmt)


def _stream_items(
    reader: _Counted, name: str, prefix: str, fmt: str | None
) -> Iterator[Part]:
    """Parse the conversations of a JSON list one at a time. The format is recognised from
    the first conversations (held until one is recognised, at most `SAMPLE` of them)."""
    index = 0
    yielded = False
    held: list[Any] = []
    try:
        for item in ijson.items(reader, prefix, use_float=True, buf_size=_CHUNK):
            reader.mark()
            if fmt is None:
                held.append(item)
                fmt = probe_format(held)
                if fmt is None:
                    if len(held) >= SAMPLE:
                        raise ImportFileError(
                            f"Treechat does not recognise this file's format. It reads "
                            f"{KNOWN} exports."
                        )
                    continue
                batch, held = held, []
            else:
                batch = [item]
            for one in batch:
                part = parse_export([one], fmt, first_index=index)
                index += 1
                yielded = yielded or bool(part.conversations)
                yield part, True
        if fmt is None:
            if not held:
                raise ImportFileError(
                    f"{name} holds an empty list: there are no conversations in it.")
            raise ImportFileError(
                f"Treechat does not recognise this file's format. It reads {KNOWN} exports.")
    except ImportFileError:
        raise
    except (_Refused, ijson.JSONError, ValueError) as exc:
        if isinstance(exc, _Refused):
            why = str(exc)
        elif not isinstance(exc, ijson.JSONError):
            why = unreadable_value(name, exc)
        else:
            text = str(exc)
            early = isinstance(exc, ijson.IncompleteJSONError) and (
                "premature" in text or "incomplete" in text.lower()
            )
            why = (f"{name} is not valid JSON: "
                   + ("it ends too early (truncated?)" if early else f"it is damaged — {text}"))
        if not yielded:
            raise ImportFileError(why) from None
        yield ParsedExport(fmt or "", (), (Skipped(
            f"{why} The {index} conversations before this point were read.", name),)), True


# LibreChat nests each reply inside the message it answers, so one long thread is JSON
# nested thousands deep: past what `json.loads` accepts under the default recursion limit.
_DEEP_STACK_BYTES = 512 * 1024**2
_DEEP_RECURSION_LIMIT = 400_000


def _decode_deep(raw: bytes, name: str) -> Any:
    """Decode deeply nested JSON on a thread with a stack big enough for it."""
    outcome: dict[str, Any] = {}

    def work() -> None:
        previous = sys.getrecursionlimit()
        sys.setrecursionlimit(max(previous, _DEEP_RECURSION_LIMIT))
        try:
            outcome["value"] = decode_json(raw, name)
        except RecursionError:
            outcome["error"] = ImportFileError(f"{name} is nested too deeply to read.")
        except ImportFileError as exc:
            outcome["error"] = exc
        finally:
            sys.setrecursionlimit(previous)

    previous_size = threading.stack_size(_DEEP_STACK_BYTES)
    try:
        reader = threading.Thread(target=work, name="treechat-import-json", daemon=True)
        reader.start()
    finally:
        threading.stack_size(previous_size)
    reader.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]
