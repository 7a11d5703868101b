"""An import the window runs: one export file into the store, reporting progress and
stopping between conversations when asked (see `importing.import_file`)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.tokens import TokenCounter
from ...store.database import Store
from ...store.repository import Repository

if TYPE_CHECKING:
    from .importing import CancelFlag, ImportProgress, ImportSummary


class ImportJobs:
    """Imports into one store, built once with the services (`Services.imports`)."""

    def __init__(self, store: Store, clock: Clock = SYSTEM_CLOCK,
                 counter: TokenCounter | None = None) -> None:
        self._store = store
        self._clock = clock
        self._counter = counter

    async def run(self, path: Path | str, *, progress: Callable[[ImportProgress], None],
                  cancel: CancelFlag) -> ImportSummary:
        """Import `path`; the files it carries are counted with the engine's tokenizer."""
        from .importing import import_file  # loaded on the first import, not with the services

        return await import_file(self._store, path, progress=progress, cancel=cancel,
                                 clock=self._clock, counter=self._counter)

    async def titles(self, session_ids: tuple[str, ...]) -> dict[str, str]:
        """The titles of `session_ids` as the chat list shows them (a missing one is left out)."""
        def read(repo: Repository) -> dict[str, str]:
            found = {sid: repo.get_session(sid) for sid in session_ids}
            return {sid: (s.title or "Untitled") for sid, s in found.items() if s is not None}

        return await self._store.run(read)
