"""What lies on a target opens only with the passphrase, only under its own name, and says
nothing about what is inside."""

from __future__ import annotations

import json

import pytest
from tests.support.sync_devices import LIGHT_KDF

from treechat.services.sync.crypto import (
    SyncCryptoError,
    WrongPassphrase,
    new_header,
    open_header,
)


def test_the_header_opens_with_the_passphrase_and_refuses_another() -> None:
    raw, keys = new_header("right", LIGHT_KDF)
    assert open_header(raw, "right") == keys
    with pytest.raises(WrongPassphrase, match=r"^wrong passphrase for this sync target"):
        open_header(raw, "wrong")
    header = json.loads(raw)
    assert set(header) == {"format", "kdf", "salt", "check"}
    assert header["kdf"]["name"] == "argon2id"


def test_a_newer_or_unreadable_header_is_refused_not_guessed() -> None:
    raw, _ = new_header("right", LIGHT_KDF)
    newer = json.loads(raw)
    newer["format"] = 99
    with pytest.raises(SyncCryptoError, match="newer Treechat"):
        open_header(json.dumps(newer).encode(), "right")
    with pytest.raises(SyncCryptoError, match="cannot be read"):
        open_header(b"{not json", "right")


def test_an_object_opens_only_whole_and_under_its_own_name() -> None:
    _, keys = new_header("right", LIGHT_KDF)
    sealed = keys.seal_object("segments/a/x.tcs", b"the secret text")
    assert b"secret" not in sealed
    assert keys.open_object("segments/a/x.tcs", sealed) == b"the secret text"
    for bad_path, bad in (("segments/a/y.tcs", sealed), ("segments/a/x.tcs", sealed[:-3]),
                          ("segments/a/x.tcs", sealed[:10]),
                          ("segments/a/x.tcs", sealed[:20] + b"\0" + sealed[21:])):
        with pytest.raises(SyncCryptoError):
            keys.open_object(bad_path, bad)
    # two sealings of the same text differ (a fresh nonce each time)
    assert keys.seal_object("p", b"same") != keys.seal_object("p", b"same")


def test_names_are_keyed_so_equal_content_is_visible_only_with_the_key() -> None:
    _, one = new_header("right", LIGHT_KDF)
    _, other = new_header("right", LIGHT_KDF)  # another target: another salt
    assert one.name_of(b"content") == one.name_of(b"content")
    assert one.name_of(b"content") != other.name_of(b"content")
    assert one.tag("device:abc") != other.tag("device:abc")
