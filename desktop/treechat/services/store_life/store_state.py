"""Whether the open store can be written, for the window: a damaged store opens read-only
and says so in words that name the way out (see `store.database.damaged_message`)."""

from __future__ import annotations

from ...store.database import Store, StoreDamagedError, StoreError, damaged_message

__all__ = ["StoreDamagedError", "StoreError", "check_finished", "damage_message"]


def damage_message(store: Store) -> str | None:
    """What the user reads about the store's damage, or None while it is whole (or while its
    integrity check is still reading the file)."""
    report = store.damage
    return damaged_message(store.path, report.problem) if report is not None else None


def check_finished(store: Store) -> bool:
    """Whether the integrity check of this session has its answer (never waits)."""
    return store.integrity(0) is not None
