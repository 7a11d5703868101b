"""Import an export file (ChatGPT, Claude.ai, LibreChat, Open WebUI, Treechat; JSON or a zip
holding conversations.json) into the store, and export a session as JSON or Markdown.

Reading and parsing run in a thread, writes on the store's worker: the event loop never
waits on either. Each conversation is written in its own transaction, so cancelling or a
failure leaves whole conversations only.
"""

from __future__ import annotations

import asyncio
import functools
import json
import sys
import threading
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal, Protocol

from ..core import dag
from ..core.dag import Graph
from ..core.imports import ImportFileError, ParsedExport, Skipped, decode_json, parse_export
from ..core.imports.markdown import render_markdown
from ..core.imports.treechat import dump_session
from ..core.model import Annotation, Node, Session
from ..store.database import Store
from ..store.imports import write_conversation
from ..store.repository import Repository
from .clock import SYSTEM_CLOCK, Clock
from .sessions import new_id

__all__ = [
    "CancelFlag",
    "ImportFileError",
    "ImportProgress",
    "ImportSummary",
    "export_session",
    "import_file",
    "read_export",
]

# Generous: a decade of heavy ChatGPT use exports to a few hundred MB.
MAX_EXPORT_BYTES = 2 * 1024**3


class CancelFlag(Protocol):
    """Anything with `is_set()`: `asyncio.Event`, `threading.Event`."""

    def is_set(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Reported once while the file is read ("reading", total 0: not known yet), then before
    the first conversation is written and after each one ("writing")."""

    done: int
    total: int
    title: str = ""
    stage: Literal["reading", "writing"] = "writing"


@dataclass(frozen=True, slots=True)
class ImportSummary:
    """What an import added: new sessions, nodes and branches, and what it skipped."""

    source_format: str
    sessions: int
    nodes: int
    branches: int
    skipped: list[Skipped] = field(default_factory=list)
    session_ids: tuple[str, ...] = ()
    conversations: int = 0
    cancelled: bool = False


def read_export(path: Path) -> ParsedExport:
    """Read and parse an export file (blocking: call it in a thread)."""
    path = Path(path)
    try:
        if not path.is_file():
            raise ImportFileError(f"{path} is not a file.")
        if path.stat().st_size > MAX_EXPORT_BYTES:
            raise ImportFileError(f"{path.name} is larger than {MAX_EXPORT_BYTES >> 30} GB.")
        if zipfile.is_zipfile(path):
            raw, name = _conversations_from_zip(path)
        else:
            raw, name = path.read_bytes(), path.name
    except OSError as exc:
        raise ImportFileError(f"{path} cannot be read: {exc.strerror or exc}") from None
    try:
        data = decode_json(raw, name)
    except RecursionError:
        data = _decode_deep(raw, name)
    return parse_export(data)


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


def _conversations_from_zip(path: Path) -> tuple[bytes, str]:
    try:
        with zipfile.ZipFile(path) as archive:
            names = [n for n in archive.namelist()
                     if PurePosixPath(n).name == "conversations.json"]
            if not names:
                raise ImportFileError(
                    f"{path.name} is a zip without a conversations.json in it. Choose the zip "
                    "the app's data export gave you, or the JSON file itself."
                )
            member = min(names, key=lambda n: (n.count("/"), n))
            if archive.getinfo(member).file_size > MAX_EXPORT_BYTES:
                raise ImportFileError(f"{member} in {path.name} is too large to import.")
            return archive.read(member), f"{path.name}/{member}"
    except zipfile.BadZipFile as exc:
        raise ImportFileError(f"{path.name} is a damaged zip file: {exc}") from None


async def import_file(
    store: Store,
    path: Path | str,
    *,
    progress: Callable[[ImportProgress], None] | None = None,
    cancel: CancelFlag | None = None,
    clock: Clock = SYSTEM_CLOCK,
    make_id: Callable[[], str] = new_id,
) -> ImportSummary:
    """Import every conversation in `path`; each becomes a session (or tops up the session an
    earlier import of it made). Raises `ImportFileError` when the file is unusable as a
    whole; problems inside it are reported in `skipped`. Cancellation (`cancel.is_set()`)
    is honoured between conversations."""
    if progress is not None:
        progress(ImportProgress(0, 0, stage="reading"))
    parsed = await asyncio.to_thread(read_export, Path(path))
    total = len(parsed.conversations)
    skipped = list(parsed.skipped)
    if progress is not None:
        progress(ImportProgress(0, total))
    sessions = nodes = branches = 0
    touched: list[str] = []
    cancelled = False
    for done, conversation in enumerate(parsed.conversations, start=1):
        if cancel is not None and cancel.is_set():
            cancelled = True
            break
        written = await store.run(
            functools.partial(
                write_conversation, conv=conversation, now=clock.now(), make_id=make_id
            )
        )
        if written.created_session:
            sessions += 1
        nodes += written.nodes
        branches += written.branches
        if written.nodes or written.created_session:
            touched.append(written.session_id)
        if progress is not None:
            progress(ImportProgress(done, total, conversation.title))
    return ImportSummary(
        source_format=parsed.source_format,
        sessions=sessions,
        nodes=nodes,
        branches=branches,
        skipped=skipped,
        session_ids=tuple(touched),
        conversations=total,
        cancelled=cancelled,
    )


async def export_session(
    store: Store,
    session_id: str,
    fmt: str = "json",
    all_branches: bool = False,
    *,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """The session as text: "json" is the whole graph in Treechat's export format (see
    `core.imports.treechat`), which `import_file` reads back into the same graph; "md" is
    the active path as Markdown, with every other branch after it when `all_branches`."""
    if fmt not in ("json", "md"):
        raise ValueError(f"unknown export format {fmt!r} (use json or md)")

    def load(repo: Repository) -> tuple[Session, tuple[Node, ...], tuple[Annotation, ...]]:
        session = repo.get_session(session_id)
        if session is None:
            raise LookupError(f"no session {session_id!r} (see `treechat sessions`)")
        nodes = repo.session_nodes(session_id)
        notes = repo.annotations([n.id for n in nodes]) if nodes else ()
        return session, nodes, notes

    session, nodes, notes = await store.run(load)
    if fmt == "json":
        document = dump_session(session, nodes, exported_at=clock.now())
        return json.dumps(document, ensure_ascii=False, indent=1) + "\n"
    return render_markdown(
        session, Graph(nodes), all_branches=all_branches, hidden=dag.hidden_set(notes)
    )
