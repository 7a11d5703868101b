"""Treechat's own JSON export: one session's whole graph, written so that importing it into
an empty store gives back the same graph (same node ids, edges, content, HEAD, title, model).

The format, version 1::

    {
      "format": "treechat",            # how the importer recognises the file
      "version": 1,
      "exported_at": 1717000000.0,     # seconds since the epoch
      "session": {"id": str, "title": str, "head": str | null, "model": str,
                  "created_at": float, "updated_at": float, "forked_from": str | null},
      "nodes": [                       # every node the session can see, in seq order
        {"id": str, "seq": int, "created_at": float, "session_id": str,
         "role": "user" | "assistant" | "tool" | "system" | "runtime",
         "name": str, "input": any, "output": any,
         "predecessor": str | null,    # conversation edge
         "caller": str | null,         # call edge (assistant -> tool); never both
         "reads": [str], "metadata": {...}}
      ],
      "attachments": {                 # only when nodes carry files (metadata "attachments")
        sha256: {"media_type": str, "size": int, "data": base64 str}
      }
    }

`seq` only records the order; the importing store numbers nodes afresh in that order.
A node whose id is already in the store is not written again.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..model import ROLES, Node, Session
from ._common import Draft, assemble, mapping_of, parse_time
from .model import ParsedExport, Skipped

FORMAT = "treechat"
VERSION = 1


def looks_like(item: Any) -> bool:
    return isinstance(item, dict) and item.get("format") == FORMAT


def dump_session(
    session: Session, nodes: Sequence[Node], *, exported_at: float,
    files: Mapping[str, tuple[str, bytes]] | None = None,
) -> dict[str, Any]:
    """The export document for `session` and the nodes it can see; `files` the attachment
    bytes (media type, bytes) by hash that its nodes name."""
    out = {
        "format": FORMAT,
        "version": VERSION,
        "exported_at": exported_at,
        "session": {
            "id": session.id,
            "title": session.title,
            "head": session.head,
            "model": session.model,
            "created_at": session.created_at,
            "updated_at": session.updated_at,
            "forked_from": session.forked_from,
        },
        "nodes": [
            {
                "id": n.id,
                "seq": n.seq,
                "created_at": n.created_at,
                "session_id": n.session_id,
                "role": n.role,
                "name": n.name,
                "input": n.input,
                "output": n.output,
                "predecessor": n.predecessor,
                "caller": n.caller,
                "reads": list(n.reads),
                "metadata": n.metadata,
            }
            for n in sorted(nodes, key=lambda n: n.seq)
        ],
    }
    if files:
        out["attachments"] = {
            sha: {"media_type": media, "size": len(data),
                  "data": base64.b64encode(data).decode("ascii")}
            for sha, (media, data) in sorted(files.items())
        }
    return out


def _files(raw: Any) -> tuple[tuple[tuple[str, str, bytes], ...], list[Skipped]]:
    """The attachment bytes of a document, each checked against its hash."""
    out: list[tuple[str, str, bytes]] = []
    skipped: list[Skipped] = []
    for sha, entry in (raw.items() if isinstance(raw, dict) else ()):
        try:
            data = base64.b64decode(str(entry.get("data", "")), validate=True)
        except (binascii.Error, ValueError, AttributeError):
            skipped.append(Skipped(f"attachment {str(sha)[:12]} is not valid base64", ""))
            continue
        if hashlib.sha256(data).hexdigest() != sha:
            skipped.append(Skipped(f"attachment {str(sha)[:12]} does not match its hash", ""))
            continue
        out.append((str(sha), str(entry.get("media_type") or "application/octet-stream"),
                    data))
    return tuple(out), skipped


def parse(data: Any, first_index: int = 0) -> ParsedExport:
    """One session's document, or a list of them."""
    if isinstance(data, list):
        parts = [_parse_one(item) for item in data]
        return ParsedExport(FORMAT, tuple(c for p in parts for c in p.conversations),
                            tuple(s for p in parts for s in p.skipped))
    return _parse_one(data)


def _parse_one(data: Any) -> ParsedExport:
    if not isinstance(data, dict):
        return ParsedExport(FORMAT, (), (Skipped("not a Treechat export object", ""),))
    version = data.get("version")
    if not isinstance(version, int) or version > VERSION:
        return ParsedExport(FORMAT, (), (Skipped(
            f"written by a newer Treechat (format version {version}); update to import it", ""
        ),))
    session = mapping_of(data.get("session"))
    raw_nodes = data.get("nodes")
    if not isinstance(raw_nodes, list):
        raw_nodes = []
    sid = str(session.get("id") or "treechat-session")
    drafts: list[Draft] = []
    indexed = [(i, n) for i, n in enumerate(raw_nodes)]
    # File order is seq order; sort anyway so a hand-edited file still goes parent-first.
    indexed.sort(key=lambda p: (_seq(p[1]), p[0]))
    for position, raw in indexed:
        drafts.append(_draft(raw, position))
    conversation, skipped = assemble(
        FORMAT,
        source_id=sid,
        title=str(session.get("title") or ""),
        created_at=parse_time(session.get("created_at")),
        updated_at=parse_time(session.get("updated_at")),
        model=str(session.get("model") or ""),
        drafts=drafts,
        head=session.get("head") if isinstance(session.get("head"), str) else None,
        exact=True,
    )
    files, bad_files = _files(data.get("attachments"))
    if conversation is not None and files:
        conversation = replace(conversation, files=files)
    return ParsedExport(
        FORMAT, (conversation,) if conversation is not None else (), (*skipped, *bad_files)
    )


def _seq(raw: Any) -> float:
    seq = raw.get("seq") if isinstance(raw, dict) else None
    return float(seq) if isinstance(seq, int | float) else float("inf")


def _draft(raw: Any, position: int) -> Draft:
    if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
        return Draft(f"node-{position + 1}", None, "user", skip_reason="node without an id")
    nid = raw["id"]
    predecessor = raw.get("predecessor")
    caller = raw.get("caller")
    role = raw.get("role")
    draft = Draft(
        nid,
        caller if isinstance(caller, str) else (
            predecessor if isinstance(predecessor, str) else None
        ),
        role if role in ROLES else "user",
        output=raw.get("output"),
        name=str(raw.get("name") or ""),
        input=raw.get("input"),
        edge="caller" if isinstance(caller, str) else "predecessor",
        created_at=parse_time(raw.get("created_at")),
        metadata=dict(mapping_of(raw.get("metadata"))),
        reads=tuple(str(r) for r in raw.get("reads") or () if isinstance(r, str)),
    )
    if role not in ROLES:
        draft.skip_reason = f"unknown role {role!r}"
    elif isinstance(caller, str) and isinstance(predecessor, str):
        draft.skip_reason = "node has both a predecessor and a caller"
    return draft
