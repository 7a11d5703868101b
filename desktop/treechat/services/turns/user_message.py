"""The typed message committed under HEAD before its turn runs: its files stored first, the
staged attaches written as pointers before it, the chat titled from its first message."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...core import dag
from ...core.attachments import AttachmentRef, with_attachments
from ...core.clock import Clock
from ...core.model import GraphError, Node
from ...store.database import Store
from ...store.repository import Repository
from ..attachments import AttachmentService, PreparedFile
from .sessions import SessionService, title_first


@dataclass(frozen=True, slots=True)
class Attachment:
    """A staged attach: another branch's context to bring into the next request."""

    source_session: str
    source_head: str
    label: str = ""
    tokens: int = 0
    metadata: Mapping[str, Any] = field(default_factory=dict)


MessageCommit = Callable[[], Awaitable[tuple[str, Node]]]
"""Writes the message when called: (the id the reply hangs under, the message node)."""


class UserMessages:
    def __init__(
        self, store: Store, sessions: SessionService, attachments: AttachmentService, *,
        clock: Clock, make_id: Callable[[], str],
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.attachments = attachments
        self.clock = clock
        self.make_id = make_id

    async def writer(
        self, session_id: str, text: str, attachments: Sequence[Attachment] = (),
        files: Sequence[PreparedFile | str | os.PathLike[str]] = (),
    ) -> MessageCommit:
        """What commits `text` (with its staged attaches and files) under HEAD when called,
        the files prepared now: a file that cannot be sent raises before anything is written."""
        text = text.strip()
        prepared = await self.prepared(files)
        if not text and not attachments and not prepared:
            raise ValueError("nothing to send")

        async def commit() -> tuple[str, Node]:
            # The bytes are stored before the node that names them, and before the request.
            await self.attachments.save(prepared)
            refs = await asyncio.to_thread(self.attachments.refs, prepared)
            user = await self.commit(session_id, text, attachments, refs,
                                     [f.meta() for f in prepared])
            return user.id, user

        return commit

    async def prepared(
        self, files: Sequence[PreparedFile | str | os.PathLike[str]]
    ) -> tuple[PreparedFile, ...]:
        ready = [f for f in files if isinstance(f, PreparedFile)]
        paths = [f for f in files if not isinstance(f, PreparedFile)]
        if paths:
            ready.extend(await self.attachments.prepare(paths))
        return tuple(ready)

    async def commit(
        self, session_id: str, text: str, attachments: Sequence[Attachment],
        files: Sequence[AttachmentRef] = (),
        details: Sequence[Mapping[str, Any]] = (),
    ) -> Node:
        """`details` (per file, in order) add what the chat shows of each: pages, size in
        pixels."""
        if not attachments and not files:
            return await self.sessions.append_message(session_id, text)
        now = self.clock.now()
        ids = [self.make_id() for _ in range(len(attachments) + 1)]

        def work(repo: Repository) -> Node:
            session = repo.get_session(session_id)
            if session is None:
                raise GraphError(f"no session {session_id!r}")
            nodes: list[Node] = []
            parent = session.head
            for att, nid in zip(attachments, ids, strict=False):
                nodes.append(
                    Node(
                        id=nid,
                        seq=0,
                        created_at=now,
                        session_id=session_id,
                        role="runtime",
                        name="attach",
                        output=att.label or "attached context",
                        predecessor=parent,
                        metadata={
                            "source_session": att.source_session,
                            "source_head": att.source_head,
                            **dict(att.metadata),
                        },
                    )
                )
                parent = nid
            user = Node(
                id=ids[-1],
                seq=0,
                created_at=now,
                session_id=session_id,
                role="user",
                output=text,
                predecessor=parent,
                metadata=_with_details(with_attachments({}, files), details),
            )
            nodes.append(user)
            stored = repo.apply_change(session_id, dag.Change(tuple(nodes), user.id), now)
            title_first(repo, session, text, [f.name for f in files])
            return stored[-1]

        return await self.store.run(work)


def _with_details(metadata: dict[str, Any], details: Sequence[Mapping[str, Any]]
                  ) -> dict[str, Any]:
    for entry, more in zip(metadata.get("attachments") or (), details, strict=False):
        entry.update({k: more[k] for k in ("pages", "width", "height") if k in more})
    return metadata
