"""The mutable state every device shares, as one pycrdt (Yjs) document: merging two copies in
any order, any number of times, gives the same document.

Each value is a register with one slot per device (`<field>@<device>`: {"v": value, "t": when});
only its device writes a slot, so no write is ever lost to a concurrent one, and the value
is the slot written last (ties go to the larger device id). A title keeps every edit
(`log/<field>@<device>@<when>`) so its history shows the other device's too. Annotations
(pins, hidden heads) are a grow-only set. HEADs are per device: which one a chat shows here
is decided against the graph (`SyncEngine`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pycrdt import Doc, Map

ROOT = "state"
LOGGED = ("title/",)  # fields whose every edit is kept
DELETABLE = ("preset/", "project/")  # fields whose absence from the store is a deletion


@dataclass(frozen=True, slots=True)
class Edit:
    field: str
    value: Any
    at: float
    device: str


class SyncDocument:
    def __init__(self, device: str, state: bytes | None = None) -> None:
        self.device = device
        self.doc: Doc[Any] = Doc()
        if state:
            self.doc.apply_update(state)
        self.map: Map[Any] = self.doc.get(ROOT, type=Map)

    def encode(self) -> bytes:
        return bytes(self.doc.get_update())

    def state_vector(self) -> bytes:
        return bytes(self.doc.get_state())

    def update_since(self, state_vector: bytes | None) -> bytes:
        return bytes(self.doc.get_update(state_vector) if state_vector else self.doc.get_update())

    def apply(self, update: bytes) -> None:
        self.doc.apply_update(update)

    # --- reading -------------------------------------------------------------------------

    def _slots(self) -> dict[str, dict[str, tuple[Any, float]]]:
        slots: dict[str, dict[str, tuple[Any, float]]] = {}
        for key, value in self.map.items():
            if key.startswith(("log/", "ann/")) or not isinstance(value, dict):
                continue
            field, _, device = key.rpartition("@")
            if field:
                slots.setdefault(field, {})[device] = (value.get("v"), float(value.get("t", 0)))
        return slots

    def view(self) -> tuple[dict[str, Any], dict[str, dict[str, tuple[Any, float]]]]:
        """(the value of every field but HEADs, every device's HEAD slots by field)."""
        values: dict[str, Any] = {}
        heads: dict[str, dict[str, tuple[Any, float]]] = {}
        for field, by_device in self._slots().items():
            if field.startswith("head/"):
                heads[field] = by_device
            elif field != "device":
                device = max(by_device, key=lambda d: (by_device[d][1], d))
                values[field] = by_device[device][0]
        return values, heads

    def devices(self) -> dict[str, str]:
        return {d: str(v) for d, (v, _) in self._slots().get("device", {}).items()}

    def history(self, field: str) -> list[Edit]:
        """Every edit of a logged field, oldest first."""
        prefix = f"log/{field}@"
        out: list[Edit] = []
        for key, value in self.map.items():
            if key.startswith(prefix):
                rest, _, at = key.rpartition("@")
                out.append(Edit(field, value, float(at), rest.rpartition("@")[2]))
        return sorted(out, key=lambda e: (e.at, e.device))

    def annotations(self) -> list[list[Any]]:
        return [list(v) for k, v in self.map.items() if k.startswith("ann/")]

    # --- writing -------------------------------------------------------------------------

    def record(self, changes: Mapping[str, Any], now: float) -> None:
        """Write this device's slot of each changed field (and log the logged ones)."""
        if not changes:
            return
        with self.doc.transaction():
            for field, value in changes.items():
                self.map[f"{field}@{self.device}"] = {"v": value, "t": now}
                if field.startswith(LOGGED):
                    self.map[f"log/{field}@{self.device}@{now!r}"] = value

    def local_changes(self, local: Mapping[str, Any], shown: Mapping[str, Any]) -> dict[str, Any]:
        """The fields where the store differs from what the document last put there: edits
        made here since. A preset gone from the store was deleted here (None); any other
        field missing is of a chat not here yet."""
        changes = {k: v for k, v in local.items() if shown.get(k, _MISSING) != v}
        changes.update({k: None for k, v in shown.items()
                        if k.startswith(DELETABLE) and v is not None and k not in local})
        return changes

    def add_annotations(self, rows: Iterable[Sequence[Any]]) -> int:
        added = 0
        with self.doc.transaction():
            for row in rows:
                key = "ann/" + hashlib.sha256(json.dumps(list(row)).encode()).hexdigest()[:32]
                if key not in self.map:
                    self.map[key] = list(row)
                    added += 1
        return added

    def name_device(self, name: str, now: float) -> None:
        current = self._slots().get("device", {}).get(self.device)
        if current is None or current[0] != name:
            self.record({"device": name}, now)


_MISSING = object()
