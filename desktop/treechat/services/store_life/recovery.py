"""Opening the store for use: refuse what cannot be opened, then recover replies that were
being streamed when the last process died, from the store's drafts and from the journals a
command leaves beside it while it waits for a provider with the store released."""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Callable
from pathlib import Path

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.model import Node
from ...store.database import Store
from ...store.repository import Draft, Repository
from ..turns.sessions import new_id
from .drafts import ReplyJournal, journals

log = logging.getLogger(__name__)


def open_and_recover(
    path: Path, *, clock: Clock = SYSTEM_CLOCK, make_id: Callable[[], str] = new_id,
    memory_limit: str | None = None,
) -> Store:
    """Open the store at `path` (DuckDB held to `memory_limit`, if given) and turn leftover
    drafts into interrupted assistant nodes."""
    store = Store.open(path, memory_limit=memory_limit)
    try:
        recover_drafts(store, clock=clock, make_id=make_id)
    except BaseException:
        store.close()
        raise
    return store


def recover_drafts(
    store: Store, *, clock: Clock = SYSTEM_CLOCK, make_id: Callable[[], str] = new_id
) -> tuple[Node, ...]:
    """Each leftover draft becomes an interrupted reply. A journal whose process is gone is
    taken into the store first; a reply still being written by a live process (its journal
    locked) is left alone, its draft as well."""
    return _recover(store, clock=clock, make_id=make_id, journals_only=False)


def has_journals(store: Store) -> bool:
    """Whether replies of other processes are journaled beside the store (cheap: a listing)."""
    return bool(journals(store.path))


def adopt_journals(
    store: Store, *, clock: Clock = SYSTEM_CLOCK, make_id: Callable[[], str] = new_id
) -> tuple[Node, ...]:
    """For a process that holds the store for long (the window): take in the replies a
    command left journaled because it could not open the store to write them (their process
    has ended or given up). Drafts of this process's own turns are not touched."""
    return _recover(store, clock=clock, make_id=make_id, journals_only=True)


class CommandReplies:
    """The replies `treechat send` left journaled beside the window's store, taken in on the
    window's behalf (`adopt`), so the window never holds the store itself."""

    def __init__(self, store: Store, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    async def adopt(self) -> tuple[Node, ...]:
        """Take in what is journaled, off the caller's loop; nothing while the store has let
        go of its file or when there is no journal (a listing, the usual answer)."""
        store = self._store
        if store.released or not await asyncio.to_thread(has_journals, store):
            return ()
        return await asyncio.to_thread(adopt_journals, store, clock=self._clock)


def _recover(
    store: Store, *, clock: Clock, make_id: Callable[[], str], journals_only: bool
) -> tuple[Node, ...]:
    now = clock.now()
    in_flight: set[str] = set()
    adopted: list[ReplyJournal] = []
    for journal in journals(store.path):
        draft_id = journal.path.name.removesuffix(".json")
        if not journal.claim():
            in_flight.add(draft_id)
            continue
        draft = journal.read()
        if draft is None:
            journal.discard()
            continue
        if store.read_only:  # kept for a store that can be written
            journal.let_go()
            continue
        if not store.call(functools.partial(_place, draft=draft)):
            log.warning(
                "the reply journal %s belongs to session %s, which this store does not hold "
                "(a restored backup?); it is kept", journal.path, draft.session_id,
            )
            journal.let_go()
            in_flight.add(draft_id)
            continue
        adopted.append(journal)
    # Once its draft row is written the journal goes; the row becomes the node below.
    for journal in adopted:
        journal.discard()
    if store.read_only or (journals_only and not adopted):
        return ()
    taken = {j.path.name.removesuffix(".json") for j in adopted}

    def recover(repo: Repository) -> tuple[Node, ...]:
        keep = {d.id for d in repo.drafts()} - taken if journals_only else in_flight
        return repo.recover_drafts(make_id, now, keep=frozenset(keep))

    return store.call(recover)


def _place(repo: Repository, draft: Draft) -> bool:
    """Write a journaled draft into the store (the row it left there has the same id and
    older text); False when its session or the message it answers is not in this store."""
    if repo.get_session(draft.session_id) is None:
        return False
    if draft.parent_id is not None and repo.get_node(draft.parent_id) is None:
        return False
    repo.write_draft(draft)
    return True
