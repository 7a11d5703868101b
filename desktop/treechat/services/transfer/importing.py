"""Import an export file (ChatGPT, Claude.ai, DeepSeek, Grok, Google AI Studio, LibreChat,
Open WebUI, Treechat; JSON or a zip holding it) into the store, and export a session as JSON or
Markdown.

Reading and parsing run in a thread, writes on the store's worker: the event loop never
waits on either. Each conversation is written in its own transaction, so cancelling or a
failure leaves whole conversations only.

Large files are read a conversation at a time, zip members through a cap on what they unpack
to (`export_reading`).

The files an export carries for its messages (a zip's images and uploads, text or bytes held
inline) become real attachments before their messages are written (`import_assets`).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.imports import (
    ImportFileError,
    Skipped,
)
from ...core.tokens import TokenCounter
from ...store.database import Store
from ...store.imports import WrittenConversation, hold_cache, release_cache, write_conversation
from ...store.repository import Repository
from ..attachments import AttachmentLimits
from ..turns.sessions import new_id
from .export_reading import (
    MAX_CONVERSATION_BYTES,
    MAX_EXPORT_BYTES,
    MAX_EXPORT_FILES_BYTES,
    WHOLE_FILE_BYTES,
    parts_of,
)
from .import_assets import AssetCounts, ExportAssets

__all__ = [
    "CancelFlag",
    "ImportFileError",
    "ImportProgress",
    "ImportSummary",
    "export_session",
    "import_file",
]


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

    parts = parts_of(
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
    from ...providers.tokenizer import CachedTiktokenCounter

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
    """The session as text (see `transfer.exporting`, which the window and the command line
    call; kept here for callers of the import module)."""
    from .exporting import export_session as export

    return await export(store, session_id, fmt, all_branches, clock=clock)
