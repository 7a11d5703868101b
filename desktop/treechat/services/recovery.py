"""Opening the store for use: refuse what cannot be opened, then recover replies that were
being streamed when the last process died, from the store's drafts and from the journals a
command leaves beside it while it waits for a provider with the store released."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from pathlib import Path

from ..core.model import Node
from ..store.database import Store
from ..store.repository import Draft, Repository
from .clock import SYSTEM_CLOCK, Clock
from .drafts import ReplyJournal, journals
from .sessions import new_id

log = logging.getLogger(__name__)


def open_and_recover(
    path: Path, *, clock: Clock = SYSTEM_CLOCK, make_id: Callable[[], str] = new_id
) -> Store:
    """Open the store at `path` and turn leftover drafts into interrupted assistant nodes."""
    store = Store.open(path)
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
    if store.read_only:
        return ()
    return store.call(lambda r: r.recover_drafts(make_id, now, keep=frozenset(in_flight)))


def _place(repo: Repository, draft: Draft) -> bool:
    """Write a journaled draft into the store (the row it left there has the same id and
    older text); False when its session or the message it answers is not in this store."""
    if repo.get_session(draft.session_id) is None:
        return False
    if draft.parent_id is not None and repo.get_node(draft.parent_id) is None:
        return False
    repo.write_draft(draft)
    return True
