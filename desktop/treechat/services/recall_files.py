"""The attachments `recall` searches: the files of messages the request no longer shows in
full (aged to a stub naming the file, or folded into a summary), found by name and content
through the full-text index, and what recall gives back for each: a text file's text, a PDF's
page text, and for an image what it is and how to show it again (its pixels are no text)."""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Iterable, Mapping, Sequence

from ..core.attachments import (
    IMAGE_TYPES,
    AttachmentError,
    AttachmentRef,
    human_size,
    node_attachments,
)
from ..store.database import Store
from ..store.fulltext import FullTextIndex
from ..store.repository import Repository
from .attachments import AttachmentLimits, prepare_bytes

# Stored bytes passed the caps when they were attached or imported; reading them back for
# their text is not the place to refuse them.
_READ_BACK = AttachmentLimits(max_file_bytes=1 << 40, max_message_bytes=1 << 40,
                              max_pdf_pages=100_000)


def hidden_files(repo: Repository, seqs: Iterable[int]) -> dict[int, tuple[AttachmentRef, ...]]:
    """seq -> the attachments of those user messages (the ones that carry any)."""
    rows = repo.con.execute(
        "SELECT seq, metadata FROM nodes WHERE seq IN (SELECT unnest(?)) AND role = 'user' "
        "AND json_exists(metadata, '$.attachments')",
        [sorted(set(seqs))],
    ).fetchall()
    out: dict[int, tuple[AttachmentRef, ...]] = {}
    for seq, raw in rows:
        meta = json.loads(raw) if isinstance(raw, str) else raw
        refs = node_attachments(meta) if isinstance(meta, Mapping) else ()
        if refs:
            out[int(seq)] = refs
    return out


def recall_text(ref: AttachmentRef, data: bytes | None) -> str:
    """What recall gives back for one attachment: the text the model was sent for it, or for
    an image what it is and that attaching it again shows it."""
    if data is None:
        return f"File: {ref.name}\n[its bytes are not in this store]"
    try:
        prepared = prepare_bytes(data, ref.name, _READ_BACK)
    except AttachmentError as exc:
        return f"File: {ref.name}\n[it could not be read: {exc}]"
    if ref.media_type in IMAGE_TYPES or prepared.kind == "image":
        return (f"Image: {ref.name} ({prepared.ref.media_type}, {prepared.width}x"
                f"{prepared.height} pixels, {human_size(len(data))}), attached earlier in this "
                "conversation. Its pixels cannot be given back as text: to show it to the model "
                "again, attach it again.")
    return prepared.text


async def ensure_indexed(store: Store, index: FullTextIndex,
                         refs: Sequence[AttachmentRef]) -> None:
    """Put the texts of these attachments into the index, once per file; read and extracted
    one file at a time, off the event loop and off the store's worker."""
    wanted = {r.sha256: r for r in refs}
    have = await store.run(lambda repo: index.files_indexed(wanted))
    for sha, ref in sorted(wanted.items()):
        if sha in have:
            continue
        data = await store.run(functools.partial(_bytes_of, sha=sha))
        text = await asyncio.to_thread(recall_text, ref, data)
        del data
        await store.run(functools.partial(_add, index=index, texts={sha: text}))


def _bytes_of(repo: Repository, *, sha: str) -> bytes | None:
    return repo.attachment_bytes(sha)


def _add(repo: Repository, *, index: FullTextIndex, texts: Mapping[str, str]) -> None:
    index.add_files(texts)
