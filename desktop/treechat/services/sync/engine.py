"""One sync with one target: send what this device has that the target lacks, then take in
what the other devices wrote. Taking in is a set union through the store's append-only paths
plus a merge of the sync document, all in one transaction, so it is idempotent and the order
segments arrive in does not matter. A segment that does not open is refused and reported,
never imported; nothing is imported at all under a wrong passphrase."""

from __future__ import annotations

import asyncio
import base64
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ...core.clock import Clock
from ...store import sync_segments as db
from ...store.database import Store
from ...store.repository import Repository
from .crypto import HEADER_NAME, SyncKeys, new_header, open_header
from .document import SyncDocument
from .segments import (
    SEGMENT_SUFFIX,
    SEGMENTS,
    Segment,
    SegmentRefused,
    blob_path,
    device_folder,
    open_blob,
    open_segment,
    seal_blob,
    seal_segment,
)
from .targets import FileRefused, SyncTarget, TargetError

NODES_PER_SEGMENT = 5000

DOCUMENT_SETTING = "sync.document"
SENT_STATE_SETTING = "sync.sent_state"
SEEN_SETTING = "sync.seen"
TARGET_TAG_SETTING = "sync.target_tag"  # which target the three above are about

Progress = Callable[[str, int, int], None]  # (phase, done, total)


@dataclass(frozen=True, slots=True)
class Refused:
    path: str
    reason: str


@dataclass(frozen=True, slots=True)
class SyncReport:
    """What one sync did, for the window and `treechat sync now`."""

    at: float
    sent_nodes: int = 0
    sent_files: int = 0
    received_nodes: int = 0
    received_files: int = 0
    new_chats: tuple[str, ...] = ()  # titles
    changed: tuple[str, ...] = ()  # fields other devices changed here ("title/<id>", ...)
    refused: tuple[Refused, ...] = ()
    first: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "at": self.at, "sent_nodes": self.sent_nodes, "sent_files": self.sent_files,
            "received_nodes": self.received_nodes, "received_files": self.received_files,
            "new_chats": list(self.new_chats), "changed": list(self.changed),
            "refused": [{"path": r.path, "reason": r.reason} for r in self.refused],
            "first": self.first,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> SyncReport:
        return cls(
            at=float(data.get("at", 0)), sent_nodes=int(data.get("sent_nodes", 0)),
            sent_files=int(data.get("sent_files", 0)),
            received_nodes=int(data.get("received_nodes", 0)),
            received_files=int(data.get("received_files", 0)),
            new_chats=tuple(data.get("new_chats", ())), changed=tuple(data.get("changed", ())),
            refused=tuple(Refused(r["path"], r["reason"]) for r in data.get("refused", ())),
            first=bool(data.get("first", False)),
        )


def open_target(target: SyncTarget, passphrase: str) -> SyncKeys:
    """The keys of `target`, writing its header first when it is new. Raises WrongPassphrase
    (one line for the user) when the passphrase does not open it."""
    try:
        raw = target.read(HEADER_NAME)
        if raw is None:
            raw, _ = new_header(passphrase)
            target.write(HEADER_NAME, raw)
            # two devices that started the same target at once: the header that stayed wins
            raw = target.read(HEADER_NAME) or raw
    except FileRefused as exc:  # without its header nothing on the target can be opened
        raise TargetError(f"{target.describe()}: its {HEADER_NAME} cannot be read ({exc})"
                          ) from None
    return open_header(raw, passphrase)


def _b64(value: Any) -> bytes | None:
    return base64.b64decode(value) if isinstance(value, str) and value else None


def load_document(repo: Repository, device: str) -> SyncDocument:
    return SyncDocument(device, _b64(repo.get_setting(DOCUMENT_SETTING)))


def _save_document(repo: Repository, doc: SyncDocument) -> None:
    repo.set_setting(DOCUMENT_SETTING, base64.b64encode(doc.encode()).decode())


@dataclass(slots=True)
class _Outgoing:
    chunks: list[db.Records]
    state: bytes | None
    vector: bytes
    first: bool


@dataclass(slots=True)
class _Incoming:
    segments: list[Segment] = field(default_factory=list)
    blobs: dict[str, tuple[str, float, bytes]] = field(default_factory=dict)
    refused: list[Refused] = field(default_factory=list)


class SyncEngine:
    """Syncs `store` with `target` as `device`. Target calls run in a worker thread."""

    def __init__(self, store: Store, target: SyncTarget, keys: SyncKeys, device: str, *,
                 clock: Clock, device_name: str = "") -> None:
        self.store = store
        self.target = target
        self.keys = keys
        self.device = device
        self.clock = clock
        self.device_name = device_name or device[:8]

    async def run(self, progress: Progress | None = None) -> SyncReport:
        await self.store.run(self._check_target)
        report = await self._send(progress)
        return await self._receive(report, progress)

    def _check_target(self, repo: Repository) -> None:
        """A target other than the last one (its key differs: another place, or the same
        place started afresh) holds none of this computer's records: send them all again."""
        tag = self.keys.tag("target")
        if repo.get_setting(TARGET_TAG_SETTING) == tag:
            return
        with repo.transaction():
            db.forget_sent(repo)
            for key in (SEEN_SETTING, SENT_STATE_SETTING):
                repo.set_setting(key, None)
            repo.set_setting(TARGET_TAG_SETTING, tag)

    # --- sending ------------------------------------------------------------------------

    def _record_here(self, repo: Repository, doc: SyncDocument, now: float) -> None:
        """Put into the document what was changed in this store since it last looked."""
        values, heads = doc.view()
        shown = {**values, **self._heads(repo, heads)}
        doc.record(doc.local_changes(db.mutable_state(repo), shown), now)
        doc.add_annotations(db.annotation_rows(repo))
        doc.name_device(self.device_name, now)

    def _prepare(self, repo: Repository) -> _Outgoing:
        now = self.clock.now()
        with repo.transaction():
            doc = load_document(repo, self.device)
            self._record_here(repo, doc, now)
            _save_document(repo, doc)
        sent = _b64(repo.get_setting(SENT_STATE_SETTING))
        vector = doc.state_vector()
        state = doc.update_since(sent) if vector != sent else None
        chunks = db.unsent_records(repo, NODES_PER_SEGMENT)
        return _Outgoing(chunks, state, vector, first=sent is None)

    async def _send(self, progress: Progress | None) -> SyncReport:
        out = await self.store.run(self._prepare)
        blobs = [b for c in out.chunks for b in c.blobs]
        total = len(blobs) + len(out.chunks) + (1 if out.state and not out.chunks else 0)
        done = 0
        for sha in blobs:
            meta, data = await self.store.run(_attachment_reader(sha))
            if meta is not None and data is not None:
                path, sealed = await asyncio.to_thread(seal_blob, self.keys, sha, meta[0],
                                                       meta[2], data)
                await asyncio.to_thread(self.target.write, path, sealed)
            done += 1
            _tell(progress, "sending", done, total)
        # blobs first: a segment on the target means its attachments are there too
        sent_nodes = 0
        chunks = out.chunks or ([db.Records()] if out.state else [])
        for i, chunk in enumerate(chunks):
            # The document's update goes with the chats' records, so a chat never arrives
            # without its title, flags and settings; the later segments hold only nodes.
            first = i == 0
            # sealing (compressing, encrypting) a segment takes a moment: off the loop
            path, sealed = await asyncio.to_thread(seal_segment, self.keys, self.device,
                                                   chunk, out.state if first else None)
            await asyncio.to_thread(self.target.write, path, sealed)
            now = self.clock.now()

            def mark(repo: Repository, chunk: db.Records = chunk, first: bool = first,
                     now: float = now) -> None:
                with repo.transaction():
                    db.mark_known(repo, chunk, now)
                    if first and out.state:
                        repo.set_setting(SENT_STATE_SETTING,
                                         base64.b64encode(out.vector).decode())

            await self.store.run(mark)
            sent_nodes += chunk.node_count
            done += 1
            _tell(progress, "sending", done, total)
        return SyncReport(at=self.clock.now(), sent_nodes=sent_nodes,
                          sent_files=len(chunks) + len(blobs), first=out.first)

    # --- receiving ----------------------------------------------------------------------

    async def _receive(self, report: SyncReport, progress: Progress | None) -> SyncReport:
        seen = set(await self.store.run(lambda r: r.get_setting(SEEN_SETTING) or []))
        own = device_folder(self.keys, self.device) + "/"
        listing = await asyncio.to_thread(self.target.list, SEGMENTS)
        new = [f for f in listing if f.path.endswith(SEGMENT_SUFFIX)
               and not f.path.startswith(own) and f.path not in seen]
        incoming = _Incoming()
        for i, stored in enumerate(new):
            try:
                raw = await asyncio.to_thread(self.target.read, stored.path)
                if raw is None:
                    raise SegmentRefused("it went away while being read")
                incoming.segments.append(
                    await asyncio.to_thread(open_segment, self.keys, stored.path, raw))
            except (SegmentRefused, FileRefused) as exc:
                incoming.refused.append(Refused(stored.path, str(exc)))
            _tell(progress, "receiving", i + 1, len(new))
        await self._fetch_blobs(incoming)
        merged = await self.store.run(lambda r: self._merge(r, incoming))
        nodes, new_chats, changed = merged
        return replace(report, at=self.clock.now(), received_nodes=nodes,
                       received_files=len(incoming.segments), new_chats=new_chats,
                       changed=changed, refused=tuple(incoming.refused))

    async def _fetch_blobs(self, incoming: _Incoming) -> None:
        named = {b: s for s in incoming.segments for b in s.records.blobs}
        missing = await self.store.run(lambda r: db.missing_attachments(r, named))
        failed: set[str] = set()
        for sha in missing:
            path = blob_path(self.keys, sha)
            try:
                raw = await asyncio.to_thread(self.target.read, path)
                if raw is None:
                    raise SegmentRefused("an attachment it names is not on the target yet")
                incoming.blobs[sha] = await asyncio.to_thread(open_blob, self.keys, sha, raw)
            except (SegmentRefused, FileRefused) as exc:
                incoming.refused.append(Refused(path, str(exc)))
                failed.add(named[sha].path)
        # a segment whose attachments could not be had is taken in again next time
        incoming.segments = [s for s in incoming.segments if s.path not in failed] + [
            replace(s, path="") for s in incoming.segments if s.path in failed]

    def _merge(self, repo: Repository,
               incoming: _Incoming) -> tuple[int, tuple[str, ...], tuple[str, ...]]:
        now = self.clock.now()
        nodes = 0
        new_sessions: list[str] = []
        with repo.transaction():
            doc = load_document(repo, self.device)
            before = doc.state_vector()
            values, heads = doc.view()
            # edits made here since the last look (before anything that came in is written)
            mine = doc.local_changes(db.mutable_state(repo), {**values, **self._heads(repo, heads)})
            for sha, (media_type, created_at, data) in incoming.blobs.items():
                repo.put_attachment(sha, media_type, data, created_at)
            merged = db.merge_records(repo, [s.records for s in incoming.segments], now)
            nodes += merged.nodes
            new_sessions.extend(merged.sessions)
            for segment in incoming.segments:
                if segment.state:
                    doc.apply(segment.state)
            if _b64(repo.get_setting(SENT_STATE_SETTING)) == before:
                # nothing of this device's was unsent: what came in need not go out again
                repo.set_setting(SENT_STATE_SETTING,
                                 base64.b64encode(doc.state_vector()).decode())
            doc.record(mine, now)  # edits made here since the last look win over older ones
            doc.add_annotations(db.annotation_rows(repo))
            doc.name_device(self.device_name, now)
            values, heads = doc.view()
            changed = db.apply_state(repo, {**values, **self._heads(repo, heads)}, now=now,
                                     revision_id=lambda: uuid.uuid4().hex)
            db.add_annotations(repo, doc.annotations())
            _save_document(repo, doc)
            seen = list(repo.get_setting(SEEN_SETTING) or [])
            seen.extend(s.path for s in incoming.segments if s.path)
            repo.set_setting(SEEN_SETTING, seen)
            titles = {r[0]: r[1] for r in repo.con.execute(
                "SELECT id, title FROM sessions WHERE id IN (SELECT unnest(?))", [new_sessions]
            ).fetchall()} if new_sessions else {}
        fresh = set(new_sessions)
        shown = tuple(c for c in changed if not c.startswith("head/")
                      and c.partition("/")[2] not in fresh)
        return nodes, tuple(titles.get(s, s) for s in new_sessions), shown

    def _heads(self, repo: Repository,
               heads: Mapping[str, Mapping[str, tuple[Any, float]]]) -> dict[str, Any]:
        """The HEAD each chat shows on this device: its own, moved forward to another
        device's newer HEAD when that continues the same branch (a reply written there), or
        the newest other device's when this one never had one."""
        wanted = {v for slots in heads.values() for v, _ in slots.values() if v}
        exists = {r[0] for r in repo.con.execute(
            "SELECT id FROM nodes WHERE id IN (SELECT unnest(?))", [sorted(wanted)]).fetchall()
        } if wanted else set()
        out: dict[str, Any] = {}
        for key, slots in heads.items():
            own = slots.get(self.device)
            head = own[0] if own is not None and own[0] in exists else None
            since = own[1] if own is not None else float("-inf")
            others = sorted(((t, d, v) for d, (v, t) in slots.items()
                             if d != self.device and t > since and v in exists), reverse=True)
            if others:
                newest = others[0][2]
                if head is None or (newest != head and db.is_ancestor(repo, head, newest)):
                    head = newest
            if head is not None:
                out[key] = head
        return out


def _attachment_reader(
    sha: str,
) -> Callable[[Repository], tuple[tuple[str, int, float] | None, bytes | None]]:
    def read(repo: Repository) -> tuple[tuple[str, int, float] | None, bytes | None]:
        return repo.attachment_meta(sha), repo.attachment_bytes(sha)

    return read


def _tell(progress: Progress | None, phase: str, done: int, total: int) -> None:
    if progress is not None:
        progress(phase, done, total)
