"""Whether the open store can be written, for the window: a damaged store opens read-only
and says so in words that name the way out (see `store.database.damaged_message`), and what
can still be read of it is exported a chat to a file (`StoreHealth.export_readable`)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from ...core.clock import SYSTEM_CLOCK, Clock
from ...store.database import Store, StoreDamagedError, StoreError, damaged_message

__all__ = [
    "ReadableExport",
    "StoreDamagedError",
    "StoreError",
    "StoreHealth",
    "check_finished",
    "damage_message",
]

log = logging.getLogger(__name__)


def damage_message(store: Store) -> str | None:
    """What the user reads about the store's damage, or None while it is whole (or while its
    integrity check is still reading the file)."""
    report = store.damage
    return damaged_message(store.path, report.problem) if report is not None else None


def check_finished(store: Store) -> bool:
    """Whether the integrity check of this session has its answer (never waits)."""
    return store.integrity(0) is not None


@dataclass(frozen=True, slots=True)
class ReadableExport:
    """What `export_readable` wrote, and the titles of the chats it could not read."""

    written: tuple[Path, ...]
    unreadable: tuple[str, ...]


class StoreHealth:
    """The health of one open store as the window asks after it: damage in words, whether the
    background check has finished, and the export of every chat that can still be read."""

    def __init__(self, store: Store, clock: Clock = SYSTEM_CLOCK) -> None:
        self._store = store
        self._clock = clock

    def damage_message(self) -> str | None:
        return damage_message(self._store)

    def check_finished(self) -> bool:
        return check_finished(self._store)

    async def export_readable(self, folder: Path) -> ReadableExport:
        """Every chat that can still be read, one Treechat JSON file each, into `folder`.
        Raises `StoreError` when not even the list of chats can be read."""
        # loaded when first asked for: the command line builds this service too
        from ..transfer.exporting import export_session, suggested_filename, write_export

        store = self._store
        written: list[Path] = []
        unreadable: list[str] = []
        sessions = await store.run(lambda r: r.list_sessions(include_hidden=True))
        used: set[str] = set()
        for session in sessions:
            name = suggested_filename(session.title or "chat", "json")
            stem = name.removesuffix(".json")
            n = 1
            while name in used or (folder / name).exists():
                n += 1
                name = f"{stem} ({n}).json"
            try:
                text = await export_session(store, session.id, "json", clock=self._clock)
                written.append(await write_export(folder / name, text))
                used.add(name)
            except StoreError:
                log.exception("chat %s could not be read for export", session.id)
                unreadable.append(session.title or session.id)
        return ReadableExport(tuple(written), tuple(unreadable))
