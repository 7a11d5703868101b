"""Backups for the window and the command line: list, make, check and restore them without
blocking the caller's loop (every step runs on a thread; a backup reads its own snapshot).

Restoring needs the store closed. The command line restores with no store open (`restore`);
the window, once its turns are stopped, restores in place (`restore_in_place`): its store lets
go of the file, the backup is put there, and the same store opens the restored file, so every
service goes on with it (`reload_after_restore` drops what they had read of the old one).
The service is bound to its store, so the window asks it for backups and never holds the store.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.clock import SYSTEM_CLOCK, Clock
from ...store import backup as backups
from ...store.backup import Backup, BackupError, BackupStopped
from ...store.database import Store, StoreError
from ...store.integrity import IntegrityReport
from .drafts import replies_in_flight
from .recovery import recover_drafts
from .reopen import reopen_waiting

if TYPE_CHECKING:
    from ..context import ContextEngine
    from ..mcp.service import McpService
    from ..models.connections import ConnectionService
    from ..turns.chat_service import ChatService

log = logging.getLogger(__name__)

__all__ = ["Backup", "BackupError", "BackupService", "reload_after_restore"]

REOPEN_WAIT_S = 10.0  # another process may take the file in the moment after the swap
REOPEN_POLL_S = 0.2


class BackupService:
    """The backups beside one store, made from it and restored into it. `reload` is what the
    services do once a restore has put another file in its place (`reload_after_restore`)."""

    def __init__(self, store: Store, *, clock: Clock = SYSTEM_CLOCK,
                 reload: Callable[[], Awaitable[None]] | None = None) -> None:
        self._store = store
        self._clock = clock
        self._reload = reload
        self.store_path = Path(store.path)

    @property
    def writes(self) -> int:
        """How many writes the store has taken in this run (a change since a look is one)."""
        return self._store.writes

    @property
    def released(self) -> bool:
        """Whether the store has let go of its file (nothing can be backed up meanwhile)."""
        return self._store.released

    @property
    def folder(self) -> Path:
        return backups.backups_dir(self.store_path)

    async def list(self) -> tuple[Backup, ...]:
        """Newest first."""
        return await asyncio.to_thread(backups.list_backups, self.store_path)

    async def create(self, reason: str = "manual") -> Backup:
        """A backup now (Help → Back up now); the store keeps answering meanwhile."""
        return await self._store.abackup(reason)

    async def backup_if_due(self, reason: str = "daily") -> Backup | None:
        """The daily backup: made when the newest is a day old or there is none. Failures are
        logged, never raised: a missed backup must not stop the app from closing."""
        try:
            return await asyncio.to_thread(self._store.backup_if_due, reason)
        except BackupStopped:  # the window is closing: the next start makes it
            log.info("the daily backup of %s was stopped as the store closed", self.store_path)
            return None
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
        await self._refuse_while_replying()
        return await asyncio.to_thread(backups.restore_backup, chosen.path, self.store_path)

    async def _refuse_while_replying(self) -> None:
        busy = await asyncio.to_thread(replies_in_flight, self.store_path)
        if busy:
            raise BackupError(
                f"{busy} `treechat send` command(s) are waiting for a reply with the store "
                "released; let them finish (or stop them), then restore"
            )

    async def restore_in_place(self, backup: Backup) -> Path | None:
        """Put `backup` in the place of the open store and open it again: the same `Store`
        object then reads the restored file. Returns where the replaced store was kept.

        A restore that fails (a damaged backup, the file in use by another process) leaves
        the store as it was, opened again, and raises `BackupError` saying why."""
        store = self._store
        await self._refuse_while_replying()
        await store.arelease()
        try:
            await self._refuse_while_replying()
            kept = await asyncio.to_thread(backups.restore_backup, backup.path, self.store_path)
        except (BackupError, OSError) as exc:
            await self._reopen()
            raise BackupError(str(exc)) from None
        try:
            await self._reopen()
        except StoreError as exc:
            raise BackupError(
                f"the backup was put in place but could not be opened ({exc}); the replaced "
                f"store is kept as {kept}"
            ) from None
        await asyncio.to_thread(lambda: recover_drafts(store, clock=self._clock))
        return kept

    async def _reopen(self) -> None:
        await reopen_waiting(self._store, clock=self._clock, wait_s=REOPEN_WAIT_S,
                             poll_s=REOPEN_POLL_S)

    async def reload_after_restore(self) -> None:
        """What the services had read of the replaced store goes (see `reload_after_restore`)."""
        if self._reload is not None:
            await self._reload()


async def reload_after_restore(
    store: Store,
    engine: ContextEngine,
    chat: ChatService,
    mcp: McpService | None,
    connections: ConnectionService | None,
) -> None:
    """What the services had read of the replaced store goes; the settings the restored one
    holds (instructions, workspace, summarizer, MCP servers, connections) are read again."""
    from ..preferences import SETTINGS_INSTRUCTIONS, SETTINGS_SUMMARIZER, SETTINGS_WORKSPACE

    engine.forget()
    keys = (SETTINGS_INSTRUCTIONS, SETTINGS_WORKSPACE, SETTINGS_SUMMARIZER)
    settings = await store.run(lambda r: {k: r.get_setting(k) for k in keys})
    config = chat.config
    config.global_instructions = str(settings.get(SETTINGS_INSTRUCTIONS) or "")
    workspace = settings.get(SETTINGS_WORKSPACE)
    config.workspace = Path(workspace) if workspace else None
    config.summarizer = str(settings.get(SETTINGS_SUMMARIZER) or "")
    if mcp is not None:
        await asyncio.to_thread(mcp.load)
    if connections is not None:
        await connections.reload()
