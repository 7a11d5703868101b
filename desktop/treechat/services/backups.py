"""Backups for the window and the command line: list, make, check and restore them without
blocking the caller's loop (every step runs on a thread; a backup reads its own snapshot).

Restoring needs the store closed: the window stops its turns, closes the store, calls
`restore`, then opens the store again (`open_and_recover`) and rebuilds its services.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from ..store import backup as backups
from ..store.backup import Backup, BackupError
from ..store.database import Store
from ..store.integrity import IntegrityReport

log = logging.getLogger(__name__)

__all__ = ["Backup", "BackupError", "BackupService"]


class BackupService:
    """The backups beside one store file."""

    def __init__(self, store_path: Path) -> None:
        self.store_path = Path(store_path)

    @property
    def folder(self) -> Path:
        return backups.backups_dir(self.store_path)

    async def list(self) -> tuple[Backup, ...]:
        """Newest first."""
        return await asyncio.to_thread(backups.list_backups, self.store_path)

    async def create(self, store: Store, reason: str = "manual") -> Backup:
        """A backup now (Help → Back up now); the store keeps answering meanwhile."""
        return await store.abackup(reason)

    async def backup_if_due(self, store: Store, reason: str = "daily") -> Backup | None:
        """The daily backup: made when the newest is a day old or there is none. Failures are
        logged, never raised: a missed backup must not stop the app from closing."""
        try:
            return await asyncio.to_thread(store.backup_if_due, reason)
        except (BackupError, OSError) as exc:
            log.warning("the daily backup of %s was not made: %s", self.store_path, exc)
            return None

    async def verify(self, backup: Backup) -> IntegrityReport:
        """Read a backup through (for the restore dialog: say whether it is whole)."""
        return await asyncio.to_thread(backups.verify_backup, backup.path)

    async def restore(self, backup: Backup | str) -> Path | None:
        """Put `backup` in the store's place; returns where the replaced store was kept.
        Raises `BackupError` while the store is open (here or in another process)."""
        chosen = (
            backup
            if isinstance(backup, Backup)
            else await asyncio.to_thread(backups.find_backup, self.store_path, backup)
        )
        return await asyncio.to_thread(backups.restore_backup, chosen.path, self.store_path)
