"""Import an export file (ChatGPT, Claude.ai, DeepSeek, Grok, Google AI Studio, LibreChat,
Open WebUI, Treechat; JSON or a zip holding it) into the store, and export a session as JSON or
Markdown.

Reading and parsing run in a thread, writes on the store's worker: the event loop never
waits on either. Each conversation is written in its own transaction, so cancelling or a
failure leaves whole conversations only.

Large files are read a conversation at a time (`ijson`), so memory stays bounded by the
largest conversation, not the file; zip members are read through a cap on the bytes they
unpack to, checked as they are read, so a zip bomb is refused before it fills memory.

The files an export carries for its messages (a zip's images and uploads, text or bytes held
inline) become real attachments before their messages are written (`import_assets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import sys
import threading
import zipfile
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any, Literal, Protocol

import ijson

from ..core.imports import (
    ImportFileError,
    ParsedExport,
    Skipped,
    decode_json,
    parse_export,
)
from ..core.imports.detect import KNOWN, SAMPLE, probe_format
from ..core.tokens import TokenCounter
from ..store.database import Store
from ..store.imports import WrittenConversation, hold_cache, release_cache, write_conversation
from ..store.repository import Repository
from .attachments import AttachmentLimits
from .clock import SYSTEM_CLOCK, Clock
from .import_assets import AssetCounts, ExportAssets
from .turns.sessions import new_id

__all__ = [
    "CancelFlag",
    "ImportFileError",
    "ImportProgress",
    "ImportSummary",
    "export_session",
    "import_file",
    "read_export",
    "read_export_parts",
]

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


class CancelFlag(Protocol):
    """Anything with `is_set()`: `asyncio.Event`, `threading.Event`."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Reported once while the file is read ("reading", total 0: not known yet), then before
    the first conversation is written and after each one ("writing"). A large file is read
    as it is written: `total` stays 0 and `bytes_done` / `bytes_total` say how far it is."""

    done: int
    total: int
    title: str = ""
    stage: Literal["reading", "writing"] = "writing"
    bytes_done: int = 0
    bytes_total: int = 0


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import added: new sessions, nodes and branches, and what it skipped.

    `kept_head` lists sessions that got new branches while their HEAD stayed where the user
    had it; `notes` says so (and anything else worth telling) in words. `attachments` counts
    the files the new messages carry that were imported as attachments, `placeholders` those
    that stayed named placeholders (not in the export, or unreadable: `skipped` says why)."""

    source_format: str
    sessions: int
    nodes: int
    branches: int
    skipped: list[Skipped] = field(default_factory=list)
    session_ids: tuple[str, ...] = ()
    conversations: int = 0
    cancelled: bool = False
    kept_head: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    attachments: int = 0
    placeholders: int = 0


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
    for part, _streamed in _parts(
        Path(path), max_bytes=max_bytes, max_conversation_bytes=max_conversation_bytes,
        whole_file_bytes=whole_file_bytes, on_bytes=on_bytes,
    ):
        yield part


_Part = tuple[ParsedExport, bool]  # a parsed part, and whether it came from a streamed list


def _parts(
    path: Path,
    *,
    max_bytes: int = MAX_EXPORT_BYTES,
    max_conversation_bytes: int = MAX_CONVERSATION_BYTES,
    whole_file_bytes: int = WHOLE_FILE_BYTES,
    on_bytes: Callable[[int, int], None] | None = None,
) -> Generator[_Part, None, None]:
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
) -> Iterator[_Part]:
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
) -> Iterator[_Part]:
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
) -> Iterator[_Part]:
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
    except (_Refused, ijson.JSONError) as exc:
        if isinstance(exc, _Refused):
            why = str(exc)
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


def _put_files(repo: Repository, *, files: Sequence[tuple[str, str, bytes]], now: float) -> None:
    with repo.transaction():
        for sha, media, data in files:
            repo.put_attachment(sha, media, data, now)


async def import_file(
    store: Store,
    path: Path | str,
    *,
    progress: Callable[[ImportProgress], None] | None = None,
    cancel: CancelFlag | None = None,
    clock: Clock = SYSTEM_CLOCK,
    make_id: Callable[[], str] = new_id,
    counter: TokenCounter | None = None,
    attachment_limits: AttachmentLimits | None = None,
) -> ImportSummary:
    """Import every conversation in `path`; each becomes a session (or tops up the session an
    earlier import of it made). Raises `ImportFileError` when the file is unusable as a
    whole; problems inside it are reported in `skipped`. Cancellation (`cancel.is_set()`)
    is honoured between conversations.

    An import never moves the HEAD of a session the user has worked in, and never writes into
    a session it did not create: new messages for such a session become a new branch (HEAD
    left where it was) or a new session, and `notes` says which.

    The files the export carries for its messages are imported as attachments (`counter`
    counts the tokens of text files, the default tokenizer when left out; `attachment_limits`
    caps each file as the composer's attachments are capped)."""
    if progress is not None:
        progress(ImportProgress(0, 0, stage="reading"))
    read_bytes = [0, 0]

    def on_bytes(done: int, total: int) -> None:
        read_bytes[0], read_bytes[1] = done, total

    parts = _parts(
        Path(path), max_bytes=MAX_EXPORT_BYTES, max_conversation_bytes=MAX_CONVERSATION_BYTES,
        whole_file_bytes=WHOLE_FILE_BYTES, on_bytes=on_bytes,
    )
    end = object()

    def next_part() -> Any:
        return next(parts, end)

    fmt = ""
    sessions = nodes = branches = conversations = done = 0
    known = 0  # conversations counted up front (0 while a large file is streamed)
    skipped: list[Skipped] = []
    touched: list[str] = []
    kept: list[str] = []
    notes: list[str] = []
    cancelled = False
    ahead: asyncio.Future[Any] = asyncio.ensure_future(asyncio.to_thread(next_part))
    cache_limit: str | None = None
    found = AssetCounts()
    archive = Path(path) if await asyncio.to_thread(_is_zip, Path(path)) else None
    assets = ExportAssets(store, archive, counter=functools.partial(_counter, counter),
                          now=clock.now, limits=attachment_limits,
                          max_total_bytes=MAX_EXPORT_FILES_BYTES)
    try:
        cache_limit = await store.run(hold_cache)
        while not cancelled:
            try:
                item = await ahead
            except ImportFileError as exc:
                if not done:
                    raise
                # A later piece (another file of a split export) is unusable: what came
                # before is written and stays; the summary says why the rest is not there.
                skipped.append(Skipped(f"{exc} The rest of the file was not imported.", ""))
                break
            if item is end:
                break
            part, streamed = item
            # Read the next conversation while this one is written.
            ahead = asyncio.ensure_future(asyncio.to_thread(next_part))
            fmt = fmt or part.source_format
            skipped.extend(part.skipped)
            conversations += len(part.conversations)
            if not streamed:
                known += len(part.conversations)
                if progress is not None:
                    progress(ImportProgress(done, known))
            for read in part.conversations:
                if cancel is not None and cancel.is_set():
                    cancelled = True
                    break
                conversation, unread, counts = await assets.bring_in(read)
                skipped.extend(unread)
                found.add(counts)
                if conversation.files:  # the bytes before the nodes that name them
                    await store.run(functools.partial(
                        _put_files, files=conversation.files, now=clock.now()))
                written: WrittenConversation = await store.run(
                    functools.partial(
                        write_conversation, conv=conversation, now=clock.now(),
                        make_id=make_id,
                    )
                )
                done += 1
                if written.created_session:
                    sessions += 1
                nodes += written.nodes
                branches += written.branches
                if written.nodes or written.created_session:
                    touched.append(written.session_id)
                if written.note:
                    notes.append(written.note)
                if written.head_kept:
                    kept.append(written.session_id)
                if progress is not None:
                    progress(ImportProgress(
                        done, known if not streamed else 0, conversation.title,
                        bytes_done=read_bytes[0], bytes_total=read_bytes[1],
                    ))
    finally:
        # The reader thread may still be working on the part after the last one written.
        with contextlib.suppress(Exception):  # only its cleanup matters now
            await ahead
        await asyncio.to_thread(parts.close)
        await asyncio.to_thread(assets.close)
        if cache_limit is not None:
            previous = cache_limit
            await store.run(lambda repo: release_cache(repo, previous))
    return ImportSummary(
        source_format=fmt,
        sessions=sessions,
        nodes=nodes,
        branches=branches,
        skipped=skipped,
        session_ids=tuple(touched),
        conversations=conversations,
        cancelled=cancelled,
        kept_head=tuple(kept),
        notes=(*notes, *_attachment_notes(found, zipped=archive is not None, fmt=fmt)),
        attachments=found.imported,
        placeholders=found.placeholders,
    )


def _is_zip(path: Path) -> bool:
    try:
        return path.is_file() and zipfile.is_zipfile(path)
    except OSError:
        return False


def _counter(given: TokenCounter | None) -> TokenCounter:
    if given is not None:
        return given
    from ..providers.tokenizer import CachedTiktokenCounter

    return CachedTiktokenCounter()


# The apps whose export zip carries the files its chats name.
_ZIPS_CARRY_FILES = frozenset({"chatgpt", "grok"})


def _attachment_notes(found: AssetCounts, *, zipped: bool, fmt: str) -> tuple[str, ...]:
    out: list[str] = []
    if found.imported:
        out.append(f"Images and files imported as attachments: {found.imported:,}.")
    if found.placeholders:
        why = "the export does not carry them"
        if zipped:
            why += ", or they could not be read"
        elif fmt in _ZIPS_CARRY_FILES:
            why = ("this file does not carry them; importing the export's zip brings in those "
                   "it holds")
        out.append(f"Images and files kept as named placeholders: {found.placeholders:,} "
                   f"({why}).")
    return tuple(out)


async def export_session(
    store: Store,
    session_id: str,
    fmt: str = "json",
    all_branches: bool = False,
    *,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """The session as text (see `services.exporting`, which the window and the command line
    call; kept here for callers of the import module)."""
    from .exporting import export_session as export

    return await export(store, session_id, fmt, all_branches, clock=clock)
