"""Sync as the window and the command line use it: one target per store, its passphrase
(and a WebDAV password) in the system keychain, a sync now and the last report."""

from __future__ import annotations

import asyncio
import logging
import socket
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ...core.clock import Clock
from ...store.database import Store
from .targets import FolderTarget, SyncTarget, TargetError, WebDavTarget

if TYPE_CHECKING:  # the engine brings cryptography and pycrdt: loaded at the first sync
    from .engine import SyncReport

Progress = Callable[[str, int, int], None]  # (phase, done, total)

log = logging.getLogger(__name__)

TARGET_SETTING = "sync.target"
DEVICE_SETTING = "sync.device"
LAST_SETTING = "sync.last"
PASSPHRASE_KEY = "sync-passphrase"
PASSWORD_KEY = "sync-webdav-password"

QUIET_BEFORE_SYNC = 8.0  # seconds after the last change before a background sync
SYNC_EVERY = 300.0  # seconds between background syncs that pick up other devices' work


class SyncError(Exception):
    """A sync that could not run; its text is one line for the user."""


class Secrets(Protocol):
    """The keychain as sync uses it (`providers.keys.KeyStore` is one)."""

    def set_key(self, provider: str, key: str) -> Any: ...

    def get_key(self, provider: str, /) -> str | None: ...

    def delete_key(self, provider: str) -> None: ...

    @property
    def keychain_available(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class TargetConfig:
    kind: str  # folder | webdav
    location: str  # a path or a URL
    user: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "location": self.location, "user": self.user}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TargetConfig:
        return cls(str(data["kind"]), str(data["location"]), str(data.get("user") or ""))


@dataclass(frozen=True, slots=True)
class SyncStatus:
    target: TargetConfig | None
    device: str
    last: SyncReport | None
    running: bool = False
    error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "target": self.target.as_dict() if self.target else None,
            "device": self.device,
            "last": self.last.as_dict() if self.last else None,
            "running": self.running,
            "error": self.error or None,
        }


TargetFactory = Callable[[TargetConfig, str], SyncTarget]


def make_target(config: TargetConfig, password: str) -> SyncTarget:
    if config.kind == "folder":
        return FolderTarget(Path(config.location))
    if config.kind == "webdav":
        return WebDavTarget(config.location, config.user, password)
    raise SyncError(f"unknown kind of sync target {config.kind!r}")


class SyncService:
    def __init__(self, store: Store, secrets: Secrets, *, clock: Clock,
                 device_name: str | None = None, targets: TargetFactory = make_target,
                 quiet: float = QUIET_BEFORE_SYNC, every: float = SYNC_EVERY) -> None:
        self.store = store
        # how the window schedules its background syncs (ui/controllers/sync.py)
        self.quiet = quiet  # seconds after the last change before a background sync
        self.every = every  # seconds between background syncs when nothing changes here
        self.secrets = secrets
        self.clock = clock
        self.device_name = device_name or socket.gethostname() or "this computer"
        self._targets = targets
        self._lock = asyncio.Lock()
        self._running = False
        self._error = ""
        self.listeners: list[Callable[[SyncReport | None, str], None]] = []
        self.progress_listeners: list[Progress] = []

    # --- configuration ------------------------------------------------------------------

    async def target(self) -> TargetConfig | None:
        raw = await self.store.run(lambda r: r.get_setting(TARGET_SETTING))
        return TargetConfig.from_dict(raw) if isinstance(raw, dict) else None

    async def device(self) -> str:
        def ensure(repo: Any) -> str:
            value = repo.get_setting(DEVICE_SETTING)
            if not value:
                value = uuid.uuid4().hex
                repo.set_setting(DEVICE_SETTING, value)
            return str(value)

        return await self.store.run(ensure)

    async def add(self, config: TargetConfig, passphrase: str, password: str = "") -> None:
        """Set the target (replacing any), after checking that it can be reached and that the
        passphrase opens it (a new target is started with it)."""
        if not passphrase:
            raise SyncError("a passphrase is needed: everything on the target is encrypted "
                            "with it")
        if not await asyncio.to_thread(lambda: self.secrets.keychain_available):
            raise SyncError("no system keychain is available to keep the passphrase in; "
                            "install or unlock one (GNOME Keyring, KWallet, macOS Keychain)")
        if config.kind == "folder":
            folder = Path(config.location).expanduser()
            if not folder.is_dir():
                raise SyncError(f"{folder} is not a folder")
            config = TargetConfig("folder", str(folder.resolve()))
        target = self._targets(config, password)
        try:
            await self._keys(target, passphrase)
        finally:
            await asyncio.to_thread(target.close)
        await asyncio.to_thread(self.secrets.set_key, PASSPHRASE_KEY, passphrase)
        if password:
            await asyncio.to_thread(self.secrets.set_key, PASSWORD_KEY, password)
        else:
            await asyncio.to_thread(self.secrets.delete_key, PASSWORD_KEY)

        def save(repo: Any) -> None:
            with repo.transaction():
                repo.set_setting(TARGET_SETTING, config.as_dict())
                repo.set_setting(LAST_SETTING, None)

        await self.store.run(save)
        await self.device()

    async def remove(self) -> bool:
        """Forget the target and its secrets; what came in stays, and nothing on the target is
        touched. False when there was none."""
        had = await self.target() is not None
        await self.store.run(lambda r: r.set_setting(TARGET_SETTING, None))
        await asyncio.to_thread(self.secrets.delete_key, PASSPHRASE_KEY)
        await asyncio.to_thread(self.secrets.delete_key, PASSWORD_KEY)
        return had

    async def status(self) -> SyncStatus:
        from .engine import SyncReport

        last = await self.store.run(lambda r: r.get_setting(LAST_SETTING))
        return SyncStatus(await self.target(), await self.device(),
                          SyncReport.from_dict(last) if isinstance(last, dict) else None,
                          self._running, self._error)

    async def _keys(self, target: SyncTarget, passphrase: str) -> Any:
        from .crypto import SyncCryptoError, WrongPassphrase
        from .engine import open_target

        try:
            return await asyncio.to_thread(open_target, target, passphrase)
        except TargetError as exc:
            raise SyncError(str(exc)) from None
        except (WrongPassphrase, SyncCryptoError) as exc:
            raise SyncError(str(exc)) from None

    # --- syncing ------------------------------------------------------------------------

    async def sync_now(self, progress: Progress | None = None) -> SyncReport:
        """Sync with the target once; SyncError (one line) when it cannot."""
        config = await self.target()
        if config is None:
            raise SyncError("no sync target is set (treechat sync add folder PATH, or "
                            "Settings → Sync)")
        async with self._lock:
            self._running = True
            try:
                report = await self._run(config, progress)
            except SyncError as exc:
                self._error = str(exc)
                self._notify(None, self._error)
                raise
            finally:
                self._running = False
            self._error = ""
        self._notify(report, "")
        return report

    async def _run(self, config: TargetConfig, progress: Progress | None) -> SyncReport:
        passphrase = await asyncio.to_thread(self._secret, PASSPHRASE_KEY)
        if not passphrase:
            raise SyncError("the sync passphrase is not in the keychain; add the target again")
        password = ""
        if config.kind == "webdav":
            password = await asyncio.to_thread(self._secret, PASSWORD_KEY)
        target = self._targets(config, password)
        try:
            return await self._run_with(target, passphrase, progress)
        finally:
            await asyncio.to_thread(target.close)

    async def _run_with(self, target: SyncTarget, passphrase: str,
                        progress: Progress | None) -> SyncReport:
        from .engine import SyncEngine

        keys = await self._keys(target, passphrase)
        engine = SyncEngine(self.store, target, keys, await self.device(), clock=self.clock,
                            device_name=self.device_name)

        def tell(phase: str, done: int, total: int) -> None:
            if progress is not None:
                progress(phase, done, total)
            for listener in self.progress_listeners:
                listener(phase, done, total)

        try:
            report = await engine.run(tell)
        except TargetError as exc:
            raise SyncError(str(exc)) from None
        await self.store.run(lambda r: r.set_setting(LAST_SETTING, report.as_dict()))
        return report

    def _secret(self, name: str) -> str:
        return self.secrets.get_key(name) or ""

    def _notify(self, report: SyncReport | None, error: str) -> None:
        for listener in self.listeners:
            try:
                listener(report, error)
            except Exception:
                log.exception("sync listener failed")

    async def title_history(self, session_id: str) -> list[tuple[float, str, str]]:
        """(when, device name, title) of every edit of the chat's title that sync carried."""
        from .engine import load_document

        def read(repo: Any) -> list[tuple[float, str, str]]:
            doc = load_document(repo, "")
            names = doc.devices()
            return [(e.at, names.get(e.device, e.device[:8]), str(e.value))
                    for e in doc.history(f"title/{session_id}")]

        return await self.store.run(read)
