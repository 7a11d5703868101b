"""Exports the window asks for (File → Export chat…, Export all chats): the same code as
`treechat export`, run against the store the services hold, so the window never touches the
store itself."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...core.clock import Clock

if TYPE_CHECKING:
    from ...store.database import Store
    from .exporting import ExportScope

# `exporting` (and the importers' formats it writes) loads at the first export, not with the
# services: the command line builds them too.

FORMATS = ("md", "json")


class ChatExports:
    """Exports from one store, built once with the services (`of` finds that one)."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    async def chat(self, session_id: str, fmt: str, scope: ExportScope) -> str:
        """One chat as Markdown or JSON, HEAD's branch or every branch."""
        from .exporting import export_session

        return await export_session(self._store, session_id, fmt, scope=scope, clock=self._clock)

    async def all_chats(self, fmt: str) -> str:
        """Every visible chat, newest first."""
        from .exporting import export_sessions

        return await export_sessions(self._store, fmt, clock=self._clock)

    @staticmethod
    def filename(title: str, fmt: str) -> str:
        from .exporting import suggested_filename

        return suggested_filename(title, fmt)

    async def files_beside(self, markdown: Path | str, session_ids: list[str] | None = None,
                           *, all_branches: bool = False) -> tuple[Path, ...]:
        """The files a Markdown export's messages carry, written in a folder beside it (every
        chat's when `session_ids` is None), as `treechat export -o` does."""
        from .exporting import write_markdown_attachments

        ids = session_ids if session_ids is not None else [
            s.id for s in await self._store.run(lambda r: r.list_sessions())]
        return await write_markdown_attachments(self._store, Path(markdown), ids,
                                                all_branches=all_branches)

    @staticmethod
    async def write(path: Path | str, text: str) -> Path:
        """Write the export whole or not at all (a half-written file never replaces one)."""
        from .exporting import write_export

        return await write_export(Path(path), text)
