"""Opening the store for use: refuse what cannot be opened, then recover replies that were
being streamed when the last process died."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..core.model import Node
from ..store.database import Store
from .clock import SYSTEM_CLOCK, Clock
from .sessions import new_id


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
    now = clock.now()
    return store.call(lambda r: r.recover_drafts(make_id, now))
