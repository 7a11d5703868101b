"""The sync target's encryption: a key derived from the passphrase with Argon2id, objects
sealed with AES-256-GCM and named by a keyed hash of their content, so the target sees sizes
and times and nothing else. A wrong passphrase or a damaged object fails authentication."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.argon2 import Argon2id
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

HEADER_NAME = "treechat-sync.json"
HEADER_FORMAT = 1
MAGIC = b"TCS1"
NONCE_BYTES = 12
_CHECK_TEXT = b"treechat sync key check"

# OWASP's second Argon2id setting (19 MiB would do; 64 MiB makes guessing dearer): about half a
# second on a laptop, paid once per process and target.
DEFAULT_KDF: dict[str, int] = {"iterations": 3, "lanes": 4, "memory_kib": 65536}


class SyncCryptoError(Exception):
    """An object that is not what its name says: damaged, truncated, or another key's."""


class WrongPassphrase(Exception):
    """The passphrase does not open this target."""


@dataclass(frozen=True, slots=True)
class SyncKeys:
    """The two keys every object on the target goes through."""

    seal: bytes  # AES-256-GCM
    names: bytes  # HMAC-SHA256 for object and device names

    def name_of(self, data: bytes) -> str:
        """The content address of `data`: keyed, so equal content is visible only to
        holders of the key."""
        return hmac.new(self.names, data, hashlib.sha256).hexdigest()[:40]

    def tag(self, text: str) -> str:
        return hmac.new(self.names, b"tag\0" + text.encode(), hashlib.sha256).hexdigest()[:24]

    def seal_object(self, path: str, plain: bytes) -> bytes:
        """Encrypt and authenticate `plain`, bound to where it is stored (`path`): a file
        moved to another name no longer opens."""
        nonce = os.urandom(NONCE_BYTES)
        return MAGIC + nonce + AESGCM(self.seal).encrypt(nonce, plain, _aad(path))

    def open_object(self, path: str, sealed: bytes) -> bytes:
        if len(sealed) < len(MAGIC) + NONCE_BYTES + 16 or not sealed.startswith(MAGIC):
            raise SyncCryptoError("truncated or not a Treechat sync object")
        nonce = sealed[len(MAGIC):len(MAGIC) + NONCE_BYTES]
        try:
            return AESGCM(self.seal).decrypt(nonce, sealed[len(MAGIC) + NONCE_BYTES:], _aad(path))
        except InvalidTag:
            raise SyncCryptoError("damaged: it does not authenticate") from None


def _aad(path: str) -> bytes:
    return b"treechat-sync/1\0" + path.encode()


@lru_cache(maxsize=8)
def _stretch(passphrase: str, salt: bytes, iterations: int, lanes: int, memory_kib: int) -> bytes:
    # Cached per process: a sync every few minutes should not pay the KDF each time.
    return Argon2id(
        salt=salt, length=32, iterations=iterations, lanes=lanes, memory_cost=memory_kib
    ).derive(passphrase.encode("utf-8"))


def derive_keys(passphrase: str, salt: bytes, kdf: dict[str, int]) -> SyncKeys:
    master = _stretch(passphrase, salt, int(kdf["iterations"]), int(kdf["lanes"]),
                      int(kdf["memory_kib"]))

    def expand(info: bytes) -> bytes:
        return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master)

    return SyncKeys(seal=expand(b"treechat sync seal"), names=expand(b"treechat sync names"))


def new_header(passphrase: str, kdf: dict[str, int] | None = None) -> tuple[bytes, SyncKeys]:
    """The header a new target starts with (salt, KDF settings, a key check) and its keys."""
    params = dict(kdf or DEFAULT_KDF)
    salt = os.urandom(16)
    keys = derive_keys(passphrase, salt, params)
    header = {
        "format": HEADER_FORMAT,
        "kdf": {"name": "argon2id", **params},
        "salt": base64.b64encode(salt).decode(),
        "check": base64.b64encode(keys.seal_object(HEADER_NAME, _CHECK_TEXT)).decode(),
    }
    return json.dumps(header, indent=1).encode(), keys


def open_header(raw: bytes, passphrase: str) -> SyncKeys:
    """The keys for a target whose header is `raw`; WrongPassphrase when it does not open."""
    try:
        header: Any = json.loads(raw)
        fmt = int(header["format"])
        kdf = {k: int(header["kdf"][k]) for k in ("iterations", "lanes", "memory_kib")}
        salt = base64.b64decode(header["salt"])
        check = base64.b64decode(header["check"])
    except (ValueError, KeyError, TypeError) as exc:
        raise SyncCryptoError(f"the target's {HEADER_NAME} cannot be read ({exc})") from None
    if fmt > HEADER_FORMAT:
        raise SyncCryptoError(
            f"the target was written by a newer Treechat (format {fmt}); update to sync with it"
        )
    keys = derive_keys(passphrase, salt, kdf)
    try:
        ok = keys.open_object(HEADER_NAME, check) == _CHECK_TEXT
    except SyncCryptoError:
        ok = False
    if not ok:
        raise WrongPassphrase("wrong passphrase for this sync target; nothing was imported")
    return keys
