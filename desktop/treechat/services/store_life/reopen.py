"""Opening the store again after it was let go of, waiting while another process holds it:
the one loop a restored backup, a reply written after a release and a command going on after
a network wait share. The wait is measured on the clock it is handed."""

from __future__ import annotations

from collections.abc import Callable

from ...core.clock import Clock
from ...store.database import Store, StoreLockedError


async def reopen_waiting(
    store: Store,
    *,
    clock: Clock,
    wait_s: float,
    poll_s: float,
    on_held: Callable[[StoreLockedError], None] | None = None,
) -> None:
    """Open `store` again, trying every `poll_s` while another process holds it, for up to
    `wait_s` of `clock`'s time; `on_held` hears once, at the first refusal that is waited on.
    Raises `StoreLockedError` once the wait is over, and any other `StoreError` at once."""
    deadline = clock.monotonic() + wait_s
    told = False
    while True:
        try:
            await store.areopen()
            return
        except StoreLockedError as exc:
            if clock.monotonic() >= deadline:
                raise
            if not told and on_held is not None:
                told = True
                on_held(exc)
            await clock.sleep(poll_s)
