"""The workspace's AGENTS.md, read for the L1 layer of the prompt and re-read when it changes.

A stat per turn decides: the file is read again only when its mtime or size moved.
"""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path

INSTRUCTIONS_FILE = "AGENTS.md"
INSTRUCTIONS_MAX_CHARS = 32_000


@dataclass(frozen=True, slots=True)
class Instructions:
    """The instructions text as of one read; `text` is empty when there is no file."""

    path: Path
    text: str
    truncated: bool = False

    @property
    def present(self) -> bool:
        return bool(self.text)


class WorkspaceInstructions:
    """Reads `AGENTS.md` from a folder, caching on (mtime_ns, size, inode)."""

    def __init__(
        self,
        folder: Path | str,
        filename: str = INSTRUCTIONS_FILE,
        max_chars: int = INSTRUCTIONS_MAX_CHARS,
    ) -> None:
        self.path = Path(folder).expanduser() / filename
        self._max_chars = max_chars
        self._signature: tuple[int, int, int] | None = None
        self._cached = Instructions(self.path, "")

    def read(self) -> Instructions:
        """The current instructions; cheap when the file has not changed since the last read."""
        try:
            st = os.stat(self.path)
        except (FileNotFoundError, NotADirectoryError):
            self._signature = None
            self._cached = Instructions(self.path, "")
            return self._cached
        signature = (st.st_mtime_ns, st.st_size, st.st_ino)
        if signature == self._signature:
            return self._cached
        try:
            # Bounded: a UTF-8 character is at most 4 bytes, so this holds max_chars and one
            # more, whatever the size of the file.
            with self.path.open("rb") as fh:
                data = fh.read(4 * (self._max_chars + 1))
            raw = data.decode("utf-8-sig", errors="replace")
        except (IsADirectoryError, PermissionError):
            raw = ""
        text = raw.strip()
        truncated = len(text) > self._max_chars
        if truncated:
            text = text[: self._max_chars]
        self._signature = signature
        self._cached = Instructions(self.path, text, truncated)
        return self._cached

    async def aread(self) -> Instructions:
        """`read` off the event loop (the folder may be on a slow or network drive)."""
        return await asyncio.to_thread(self.read)
