"""The store's errors, each with a message that says in a person's words what happened and
what to do, and the words for a damaged store and a full disk."""

from __future__ import annotations

from pathlib import Path


class StoreError(RuntimeError):
    """The store cannot be used; the message says why in words a person understands."""


class StoreTooNewError(StoreError):
    pass


class StoreCorruptError(StoreError):
    pass


class StoreLockedError(StoreError):
    """Another process holds the file; `holder` names it ("process 1234")."""

    def __init__(self, message: str, holder: str = "another process") -> None:
        super().__init__(message)
        self.holder = holder


class StoreFullError(StoreError):
    """The disk holding the store has no room left: the write did not happen, nothing that
    was written before it is lost."""


def is_disk_full(exc: BaseException) -> bool:
    return "No space left on device" in str(exc) or "Disk full" in str(exc)


def disk_full_message(path: Path) -> str:
    return (
        f"The disk holding the conversation store {path} is full (No space left on device): "
        "nothing more could be written to it. Free some space and try again."
    )


class StoreDamagedError(StoreCorruptError):
    """The file failed its integrity check: it is open read-only and is never written."""


def damaged_message(path: Path, problem: str) -> str:
    """What the user reads when the store is damaged: what happened, that nothing is written,
    and the two ways out."""
    return (
        f"The conversation store {path} is damaged: {problem}. Treechat will not write to it; "
        "what can still be read is shown read-only. To recover, restore a backup "
        "(`treechat backup list`, then `treechat backup restore NAME`; in the window, "
        "Help → Restore a backup…), or export the chats that can still be read "
        "(`treechat export SESSION -o FILE`)."
    )
