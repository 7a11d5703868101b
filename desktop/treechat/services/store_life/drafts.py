"""The text of a reply in flight, flushed to the store about once a second so a crash loses at
most the last second; promoted to a node when the reply ends.

A command-line turn lets go of the store while it waits for the provider (`store_released`):
meanwhile the draft is flushed to a journal file beside the store instead, held by a lock
while its process lives, and the store is opened again to write the reply. A journal whose
process died is taken into the store by the next one to open it (`store_life.recovery`)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import math
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.reply import with_reasoning
from ...store.database import (
    Store,
    StoreError,
    StoreLockedError,
    make_private_dir,
    make_private_file,
)
from ...store.repository import Draft, Repository
from .reopen import reopen_waiting

log = logging.getLogger(__name__)

FLUSH_INTERVAL_S = 1.0
REOPEN_WAIT_S = 20.0  # how long a finished reply waits for a store another process holds
REOPEN_POLL_S = 0.25
JOURNAL_SUFFIX = ".json"
LOCK_SUFFIX = ".lock"
COMPLETE_KEY = "stream_complete"  # in a draft's metadata: the provider's stream ended whole


def journal_dir(store_path: Path) -> Path:
    """Where replies in flight are journaled while their process has let go of the store."""
    return store_path.with_name(store_path.name + ".replies")


class ReplyJournal:
    """One reply's draft while the store is released: a JSON file replaced whole on every
    flush (a kill leaves the previous one or the next, never half of one), and a lock beside
    it held by the writing process, so a recovery elsewhere leaves a live reply alone."""

    def __init__(self, store_path: Path, draft_id: str) -> None:
        folder = journal_dir(store_path)
        self.path = folder / f"{draft_id}{JOURNAL_SUFFIX}"
        self.lock_path = folder / f"{draft_id}{LOCK_SUFFIX}"
        self._lock: FileLock | None = None

    def claim(self, timeout: float = 0.0) -> bool:
        """Take the journal's lock (False: a live process holds it)."""
        make_private_dir(self.path.parent)
        lock = FileLock(self.lock_path, timeout=timeout, is_singleton=False)
        try:
            lock.acquire()
        except Timeout:
            return False
        make_private_file(self.lock_path)
        self._lock = lock
        return True

    def write(self, draft: Draft) -> None:
        partial = self.path.with_name(self.path.name + ".partial")
        make_private_dir(partial.parent)
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(asdict(draft), fh, ensure_ascii=False)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(partial, self.path)

    def read(self) -> Draft | None:
        """The journaled draft (None when there is none or it is not one)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            return Draft(
                id=str(data["id"]), session_id=str(data["session_id"]),
                parent_id=data.get("parent_id"), model=str(data.get("model") or ""),
                text=str(data.get("text") or ""), started_at=float(data["started_at"]),
                updated_at=float(data["updated_at"]), metadata=dict(data.get("metadata") or {}),
            )
        except FileNotFoundError:
            return None
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("the reply journal %s cannot be read: %s", self.path, exc)
            return None

    def let_go(self) -> None:
        """Release the lock and keep the file: the next process to open the store takes it."""
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def discard(self) -> None:
        """The reply is in the store: the file and its lock go."""
        self.path.unlink(missing_ok=True)
        self.path.with_name(self.path.name + ".partial").unlink(missing_ok=True)
        self.let_go()
        with contextlib.suppress(OSError):
            self.lock_path.unlink()


def journals(store_path: Path) -> list[ReplyJournal]:
    """Every reply journal beside the store, in flight or left behind."""
    folder = journal_dir(store_path)
    if not folder.is_dir():
        return []
    # A lock alone: its process claimed the journal and has not written it yet (or died then).
    ids = {
        entry.name[: -len(suffix)]
        for entry in folder.iterdir()
        for suffix in (JOURNAL_SUFFIX, LOCK_SUFFIX)
        if entry.name.endswith(suffix)
    }
    return [ReplyJournal(store_path, draft_id) for draft_id in sorted(ids)]


class ReplyKeptError(StoreError):
    """The reply could not be written to the store (another process held it too long); it is
    kept in its journal, and the message says how it comes back."""

    def __init__(self, message: str, journal: Path) -> None:
        super().__init__(message)
        self.journal = journal


@dataclass
class StoreRelease:
    """How a turn lets go of the store across the provider's wait: `notify` hears, once, that
    the store is held elsewhere when the reply is to be written; it waits `wait_s` for it."""

    notify: Callable[[str], None] = lambda _message: None
    wait_s: float = REOPEN_WAIT_S
    poll_s: float = REOPEN_POLL_S
    clock: Clock = SYSTEM_CLOCK  # what the wait is measured on


class DraftWriter:
    """Accumulates streamed text; `add` is cheap, the store write happens at most every
    `interval` seconds on the store's worker, never blocking the caller's loop."""

    def __init__(
        self,
        store: Store,
        *,
        draft_id: str,
        session_id: str,
        parent_id: str | None,
        model: str,
        interval: float = FLUSH_INTERVAL_S,
        clock: Clock = SYSTEM_CLOCK,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        self.store = store
        self.draft_id = draft_id
        self.session_id = session_id
        self.parent_id = parent_id
        self.model = model
        self.interval = interval
        self.clock = clock
        self.metadata = dict(metadata or {})
        self.started_at = clock.now()
        self._parts: list[str] = []
        self._reasoning: list[str] = []
        self._flushed_len = -1
        self._flushed_reasoning = 0
        self._last_flush = -math.inf
        self._pending: asyncio.Future[None] | None = None
        self.journal: ReplyJournal | None = None  # set while the store is released

    @property
    def text(self) -> str:
        return "".join(self._parts)

    async def start(self) -> None:
        """Write the empty draft at once: a crash before the first token still leaves a
        recoverable (interrupted, empty) reply."""
        await self.flush()

    @property
    def reasoning(self) -> str:
        return "".join(self._reasoning)

    def add_reasoning(self, delta: str) -> None:
        """Reasoning streamed beside the reply: written with the draft (in its metadata,
        apart from the text), so a crash recovers it as the reply's reasoning."""
        self._reasoning.append(delta)
        self._schedule()

    def mark_complete(self, finish_reason: str | None) -> None:
        """The stream ended whole: written with the draft, so a reply recovered from it (its
        process died, or could not open the store to write it) is not marked interrupted."""
        self.metadata[COMPLETE_KEY] = True
        if finish_reason:
            self.metadata["finish_reason"] = finish_reason

    def add(self, delta: str) -> None:
        self._parts.append(delta)
        self._schedule()

    def _schedule(self) -> None:
        now = self.clock.monotonic()
        if now - self._last_flush >= self.interval and (
            self._pending is None or self._pending.done()
        ):
            self._last_flush = now
            self._pending = asyncio.ensure_future(self.flush())

    async def flush(self, *, force: bool = False) -> None:
        """Write the text so far: to the store, or to the journal while it is released."""
        text = self.text
        reasoning = len(self._reasoning)
        if not force and len(text) == self._flushed_len and reasoning == self._flushed_reasoning:
            return
        draft = self.snapshot()
        journal = self.journal
        if journal is not None:
            await asyncio.to_thread(journal.write, draft)
        else:
            await self.store.run(lambda r: r.write_draft(draft))
        self._flushed_len = len(text)
        self._flushed_reasoning = reasoning

    def snapshot(self) -> Draft:
        """The draft as it stands now."""
        return Draft(
            id=self.draft_id,
            session_id=self.session_id,
            parent_id=self.parent_id,
            model=self.model,
            text=self.text,
            started_at=self.started_at,
            updated_at=self.clock.now(),
            metadata=with_reasoning(self.metadata, self.reasoning),
        )

    async def settle(self) -> None:
        """Wait for an in-flight flush so the draft row is not rewritten after promotion."""
        if self._pending is not None:
            await asyncio.shield(self._pending)


@contextlib.asynccontextmanager
async def store_released(draft: DraftWriter, policy: StoreRelease) -> AsyncIterator[None]:
    """Let go of the store for the body (the provider's wait and stream), the draft flushed
    to its journal meanwhile; then open the store again and put the draft back in it.

    The journal is written before the file is closed and removed only after the store holds
    the same text, so a kill at any point leaves the reply in one of them (the same draft id
    in both: recovery writes it once). When the store stays held elsewhere for `wait_s`, the
    journal is kept and `ReplyKeptError` says where and how it comes back."""
    store = draft.store
    await draft.settle()
    journal = ReplyJournal(store.path, draft.draft_id)
    await asyncio.to_thread(journal.claim)
    draft.journal = journal
    try:
        await draft.flush(force=True)
        await store.arelease()
    except BaseException:
        draft.journal = None
        await asyncio.to_thread(journal.discard)
        raise
    try:
        yield
    finally:
        await draft.settle()
        await draft.flush(force=True)  # the whole text, in the journal first
        await _reopen(store, draft, journal, policy)
        try:
            there = await store.run(lambda r: _still_there(r, draft))
        except StoreError as exc:  # opened, but damaged where the question is
            await asyncio.to_thread(journal.let_go)
            raise ReplyKeptError(f"{exc} {_kept_message(store, draft, journal, '')}",
                                 journal.path) from None
        if not there:
            await asyncio.to_thread(journal.let_go)
            raise ReplyKeptError(
                "the conversation store was replaced while the reply was awaited (a backup "
                "restored?), and it no longer holds the message this reply answers. "
                f"{_kept_message(store, draft, journal, '')}", journal.path)
        draft.journal = None
        try:
            await draft.flush(force=True)
        except StoreError as exc:  # damaged or full: the reply stays where it is safe
            await asyncio.to_thread(journal.let_go)
            raise ReplyKeptError(f"{exc} {_kept_message(store, draft, journal, '')}",
                                 journal.path) from None
        await asyncio.to_thread(journal.discard)


async def reopen_within(store: Store, policy: StoreRelease, doing: str) -> None:
    """Open `store` again after a release, waiting up to `policy.wait_s` while another
    process holds it (said once through `policy.notify`: "… waiting up to N s to `doing`").
    Raises `StoreLockedError` once the wait is over, and any other `StoreError` at once."""

    def held(exc: StoreLockedError) -> None:
        policy.notify(
            f"the conversation store is in use by {exc.holder}; waiting up to "
            f"{policy.wait_s:.0f} s to {doing}"
        )

    await reopen_waiting(store, clock=policy.clock, wait_s=policy.wait_s,
                         poll_s=policy.poll_s, on_held=held)


async def _reopen(
    store: Store, draft: DraftWriter, journal: ReplyJournal, policy: StoreRelease
) -> None:
    try:
        await reopen_within(store, policy, "write the reply")
    except StoreLockedError as exc:
        await asyncio.to_thread(journal.let_go)
        raise ReplyKeptError(_kept_message(store, draft, journal, exc.holder),
                             journal.path) from None
    except StoreError as exc:  # replaced by a newer or damaged file meanwhile
        await asyncio.to_thread(journal.let_go)
        raise ReplyKeptError(f"{exc} {_kept_message(store, draft, journal, '')}",
                             journal.path) from None


def _still_there(repo: Repository, draft: DraftWriter) -> bool:
    """Whether the store still holds the session and the message the reply answers."""
    if repo.get_session(draft.session_id) is None:
        return False
    return draft.parent_id is None or repo.get_node(draft.parent_id) is not None


def replies_in_flight(store_path: Path) -> int:
    """How many replies live processes are writing with the store released (their journals
    locked): a restore waits for them rather than pull the store from under them."""
    busy = 0
    for journal in journals(store_path):
        if journal.claim():
            journal.let_go()
        else:
            busy += 1
    return busy


def _kept_message(store: Store, draft: DraftWriter, journal: ReplyJournal, holder: str) -> str:
    held = f"is still in use by {holder}, so " if holder else ""
    return (
        f"The conversation store {store.path} {held}the reply "
        f"({len(draft.text):,} characters) could not be written to it. It is kept in "
        f"{journal.path} and is added to session {draft.session_id[:12]} as a recovered "
        "reply by the Treechat window within a few seconds if that is what holds the store, "
        "else by the next `treechat` command (e.g. `treechat sessions`) once it is free."
    )
