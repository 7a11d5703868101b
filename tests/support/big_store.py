"""A store of one long chat filled to a size on disk, for what must be measured on a large
file (backups, restores, the integrity check, a `send` that reads it all)."""

from __future__ import annotations

import os
from pathlib import Path

from treechat.core.model import Session
from treechat.store.database import Store
from treechat.store.repository import Repository

BATCH = 100_000  # messages a statement writes


def fill_store(path: Path, size: int) -> int:
    """Open (or create) the store at `path` and add messages to one chat, "s1", whose text
    does not compress away (hex digests), until the file holds about `size` bytes; returns
    how many messages were written."""
    store = Store.open(path)
    try:
        store.call(lambda r: r.create_session(Session("s1", "Big", None, "m", 1.0,
                                                      updated_at=1.0)))
        text = " || ".join(["md5(random()::VARCHAR)"] * 24)
        done = 0
        while os.path.getsize(path) < size:
            def insert(r: Repository, start: int = done) -> None:
                r.con.execute(
                    f"""
                    INSERT INTO nodes (id, seq, created_at, session_id, role, output,
                                       predecessor)
                    SELECT 'n' || (i + {start}), i + {start} + 1, 1.0, 's1',
                           CASE WHEN i % 2 = 0 THEN 'user' ELSE 'assistant' END,
                           to_json({text}),
                           CASE WHEN i + {start} = 0 THEN NULL
                                ELSE 'n' || (i + {start} - 1) END
                    FROM range({BATCH}) t(i)
                    """
                )
                r.con.execute("CHECKPOINT")

            store.call(insert)
            done += BATCH
    finally:
        store.close()
    return done
