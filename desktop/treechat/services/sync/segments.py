"""Segments and blobs as they lie on a target: sealed, compressed JSON named by a keyed hash
of its content (so writing the same thing twice writes the same file), each under its device's
folder. Opening one checks its seal, its name and its format; anything else is refused."""

from __future__ import annotations

import base64
import hashlib
import json
import zlib
from dataclasses import dataclass
from typing import Any

from ...store.sync_segments import Records
from .crypto import SyncCryptoError, SyncKeys

SEGMENTS = "segments"
BLOBS = "blobs"
SEGMENT_FORMAT = 1
SEGMENT_SUFFIX = ".tcs"
BLOB_SUFFIX = ".tcb"


class SegmentRefused(Exception):
    """A segment or blob that cannot be trusted; its text is the reason, in a few words."""


@dataclass(frozen=True, slots=True)
class Segment:
    path: str
    device: str
    records: Records
    state: bytes | None  # a sync document update


def device_folder(keys: SyncKeys, device: str) -> str:
    return f"{SEGMENTS}/{keys.tag('device:' + device)}"


def seal_segment(keys: SyncKeys, device: str, records: Records,
                 state: bytes | None) -> tuple[str, bytes]:
    """(path on the target, sealed bytes) of one segment."""
    body = {"format": SEGMENT_FORMAT, "device": device, **records.as_dict(),
            "state": base64.b64encode(state).decode() if state else None}
    plain = zlib.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), 6)
    path = f"{device_folder(keys, device)}/{keys.name_of(plain)}{SEGMENT_SUFFIX}"
    return path, keys.seal_object(path, plain)


def open_segment(keys: SyncKeys, path: str, sealed: bytes) -> Segment:
    try:
        plain = keys.open_object(path, sealed)
    except SyncCryptoError as exc:
        raise SegmentRefused(str(exc)) from None
    name = path.rpartition("/")[2].removesuffix(SEGMENT_SUFFIX)
    if keys.name_of(plain) != name:
        raise SegmentRefused("its content is not what its name says")
    try:
        body: Any = json.loads(zlib.decompress(plain))
        fmt = int(body["format"])
    except (ValueError, KeyError, TypeError, zlib.error) as exc:
        raise SegmentRefused(f"unreadable ({type(exc).__name__})") from None
    if fmt > SEGMENT_FORMAT:
        raise SegmentRefused(f"written by a newer Treechat (format {fmt})")
    state = body.get("state")
    return Segment(path, str(body.get("device", "")), Records.from_dict(body),
                   base64.b64decode(state) if state else None)


def blob_path(keys: SyncKeys, sha256: str) -> str:
    return f"{BLOBS}/{keys.tag('blob:' + sha256)}{BLOB_SUFFIX}"


def seal_blob(keys: SyncKeys, sha256: str, media_type: str, created_at: float,
              data: bytes) -> tuple[str, bytes]:
    head = json.dumps({"sha256": sha256, "media_type": media_type, "created_at": created_at})
    path = blob_path(keys, sha256)
    return path, keys.seal_object(path, head.encode() + b"\n" + data)


def open_blob(keys: SyncKeys, sha256: str, sealed: bytes) -> tuple[str, float, bytes]:
    """(media type, created at, bytes) of the attachment `sha256`, checked against its hash."""
    path = blob_path(keys, sha256)
    try:
        plain = keys.open_object(path, sealed)
        head, _, data = plain.partition(b"\n")
        meta = json.loads(head)
    except (SyncCryptoError, ValueError) as exc:
        raise SegmentRefused(str(exc)) from None
    if meta.get("sha256") != sha256 or hashlib.sha256(data).hexdigest() != sha256:
        raise SegmentRefused("its bytes do not match their hash")
    return str(meta.get("media_type") or "application/octet-stream"), float(
        meta.get("created_at") or 0), data
