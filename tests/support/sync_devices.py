"""Computers that sync: each a real store in its own folder, the real sync service, and a
keychain in memory (the desktop's Secret Service does not run inside the test process;
tests/unit/test_commands_sync.py uses a real one in a child process). A target can be made
to fail part-way through an upload, as a dropped connection does."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treechat.providers.keys import KeyStore
from treechat.services.sync.crypto import HEADER_NAME, new_header
from treechat.services.sync.service import SyncService, TargetConfig
from treechat.services.sync.targets import StoredFile, SyncTarget, TargetError
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store, default_store_path

PASSPHRASE = "correct horse battery staple"
# Argon2id as on a real target, made cheap: tests open many targets.
LIGHT_KDF = {"iterations": 1, "lanes": 1, "memory_kib": 64}


class MemoryKeyring:
    """A keychain backend that keeps passwords in a dict."""

    priority = 1

    def __init__(self) -> None:
        self.passwords: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.passwords.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.passwords[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        self.passwords.pop((service, username), None)


class FlakyTarget:
    """Another target, except that the write after `fail_after` more writes fails, and
    listings come in the order `order` gives (the order files reach a folder differs)."""

    def __init__(self, inner: SyncTarget) -> None:
        self.inner = inner
        self.fail_after: int | None = None
        self.reverse = False
        self.writes = 0

    def describe(self) -> str:
        return self.inner.describe()

    def read(self, path: str) -> bytes | None:
        return self.inner.read(path)

    def write(self, path: str, data: bytes) -> None:
        if self.fail_after is not None:
            if self.fail_after <= 0:
                raise TargetError("the connection dropped")
            self.fail_after -= 1
        self.writes += 1
        self.inner.write(path, data)

    def list(self, folder: str) -> list[StoredFile]:
        found = self.inner.list(folder)
        return found[::-1] if self.reverse else found

    def remove(self, path: str) -> None:
        self.inner.remove(path)

    def close(self) -> None:
        return None  # the service closes its target after each sync: this one lives on


def start_target(target: SyncTarget, passphrase: str = PASSPHRASE) -> None:
    """Write a new target's header with the cheap KDF (the first `sync add` would write one
    with the real settings)."""
    raw, _ = new_header(passphrase, LIGHT_KDF)
    target.write(HEADER_NAME, raw)


@dataclass
class Device:
    name: str
    store: Store
    sync: SyncService
    sessions: SessionService
    target: FlakyTarget
    keyring: MemoryKeyring = field(default_factory=MemoryKeyring)

    def close(self) -> None:
        self.store.close()
        self.target.inner.close()


def make_device(root: Path, name: str, target: SyncTarget, clock: Any) -> Device:
    store = Store.open(default_store_path(root / name))
    flaky = FlakyTarget(target)
    keyring = MemoryKeyring()
    service = SyncService(store, KeyStore(backend=keyring, environ={}), clock=clock,
                          device_name=name, targets=lambda _config, _password: flaky)
    return Device(name, store, service, SessionService(store, clock=clock), flaky, keyring)


async def connect(device: Device, location: str, passphrase: str = PASSPHRASE) -> None:
    await device.sync.add(TargetConfig("folder", location), passphrase)


def graph_of(store: Store) -> dict[str, Any]:
    """Every node's content (not its seq, which is each file's own order), by id, and how
    many rows there are (a duplicate would show)."""
    def read(repo: Any) -> dict[str, Any]:
        rows = repo.con.execute(
            "SELECT id, created_at, session_id, role, name, input, output, predecessor, "
            "caller, reads, metadata FROM nodes").fetchall()
        def value(v: Any, column: int) -> Any:  # JSON columns compared as values
            return json.loads(v) if column in (5, 6, 10) and isinstance(v, str) else v

        return {"rows": len(rows), "nodes": {
            r[0]: json.dumps([value(v, i) for i, v in enumerate(r)][1:], default=str,
                             sort_keys=True)
            for r in rows}}

    return store.call(read)


def shared_state(store: Store) -> dict[str, Any]:
    """The mutable state every computer should agree on (HEADs are each computer's own)."""
    from treechat.store import sync_segments

    def read(repo: Any) -> dict[str, Any]:
        state = {k: v for k, v in sync_segments.mutable_state(repo).items()
                 if not k.startswith("head/")}
        notes = sorted(json.dumps(a) for a in sync_segments.annotation_rows(repo))
        return {"state": state, "annotations": notes}

    return store.call(read)
