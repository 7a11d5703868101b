"""Keys live in the OS keychain; without one they stay in memory for the session only."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import ClassVar

import pytest
from keyring.backends import fail

from treechat.providers.keys import (
    NO_KEYCHAIN_MESSAGE,
    KeyStore,
    RedactingFilter,
    redact,
    remember_secret,
)

ROOT = Path(__file__).resolve().parents[3]

SECRET_SERVICE_CHILD = textwrap.dedent("""
    import json
    from treechat.providers.keys import KeyStore
    key = "sk-roundtrip-" + "9z" * 12
    first = KeyStore(environ={})
    saved = first.set_key("anthropic", key)
    second = KeyStore(environ={})  # a new process would see the same thing
    read_back = second.get_key("anthropic")
    status = second.status("anthropic")
    second.delete_key("anthropic")
    after_delete = KeyStore(environ={}).get_key("anthropic")
    print(json.dumps({
        "backend": type(second._keychain()).__module__,
        "saved": [saved.source, saved.persistent],
        "round_trip": read_back == key,
        "status": status.source,
        "after_delete": after_delete,
    }))
""")


@pytest.mark.keyring
def test_round_trip_through_a_real_secret_service(tmp_path: Path) -> None:
    for tool in ("dbus-run-session", "gnome-keyring-daemon"):
        assert shutil.which(tool), f"{tool} is required (apt-get install dbus gnome-keyring)"
    child = tmp_path / "child.py"
    child.write_text(SECRET_SERVICE_CHILD)
    env = {
        **os.environ,
        "HOME": str(tmp_path),  # the test keyring lives here, never in the user's keychain
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "PYTHONPATH": os.pathsep.join([str(ROOT / "desktop"), str(ROOT)]),
    }
    (tmp_path / "run").mkdir(mode=0o700)
    script = (
        "printf 'treechat-test' | gnome-keyring-daemon --unlock --components=secrets >/dev/null; "
        f'exec "{sys.executable}" "{child}"'
    )
    done = subprocess.run(
        ["dbus-run-session", "--", "sh", "-c", script],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["backend"] == "keyring.backends.SecretService"
    assert report["saved"] == ["keyring", True]
    assert report["round_trip"] is True
    assert report["status"] == "keyring"
    assert report["after_delete"] is None
    keyrings = tmp_path / "data" / "keyrings"
    assert any(keyrings.iterdir())  # it really went to the daemon's (encrypted) store
    for path in keyrings.rglob("*"):
        if path.is_file():
            assert b"sk-roundtrip-" not in path.read_bytes()


def test_without_a_keychain_the_key_stays_in_memory_and_nothing_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    store = KeyStore(backend=fail.Keyring(), environ={})
    assert not store.keychain_available
    status = store.set_key("openai", "sk-memory-only-0123456789")
    assert status.source == "memory" and not status.persistent
    assert status.message == NO_KEYCHAIN_MESSAGE
    assert "session only" in status.message
    assert store.get_key("openai") == "sk-memory-only-0123456789"
    assert store.status("openai").source == "memory"
    assert list(tmp_path.rglob("*")) == []
    assert KeyStore(backend=fail.Keyring(), environ={}).get_key("openai") is None  # gone next time


class PlaintextKeyring:
    """A stand-in shaped like keyrings.alt's file backend, which writes keys in the clear."""

    priority = 1
    writes: ClassVar[list[str]] = []

    def set_password(self, service: str, user: str, password: str) -> None:
        self.writes.append(password)

    def get_password(self, service: str, user: str) -> str | None:
        return None


PlaintextKeyring.__module__ = "keyrings.alt.file"


def test_plaintext_backends_are_refused() -> None:
    store = KeyStore(backend=PlaintextKeyring(), environ={})
    assert store.set_key("openai", "sk-never-plain-0123456789").source == "memory"
    assert PlaintextKeyring.writes == []


def test_environment_variable_is_the_fallback() -> None:
    store = KeyStore(
        backend=fail.Keyring(), environ={"ANTHROPIC_API_KEY": "sk-ant-from-env-01234567"}
    )
    assert store.get_key("anthropic") == "sk-ant-from-env-01234567"
    assert store.key_for_model("anthropic/claude-sonnet-4-5") == "sk-ant-from-env-01234567"
    status = store.status("anthropic")
    assert status.source == "environment" and "ANTHROPIC_API_KEY" in status.message
    assert store.get_key("openai") is None
    assert store.status("openai").source == "none"
    store.set_key("anthropic", "sk-ant-typed-in-0123456789")
    assert store.get_key("anthropic") == "sk-ant-typed-in-0123456789"  # what the user typed wins


def test_redaction_of_known_and_key_shaped_secrets(caplog: pytest.LogCaptureFixture) -> None:
    remember_secret("plain-local-token-xyz")
    text = "auth plain-local-token-xyz and sk-abcdefghijklmnop and Bearer abc.def.ghi123"
    clean = redact(text)
    assert "plain-local-token-xyz" not in clean and "sk-abcdefghijklmnop" not in clean
    assert "abc.def.ghi123" not in clean
    logger = logging.getLogger("treechat.test.redaction")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.INFO, logger="treechat.test.redaction"):
        logger.info("calling with %s", "sk-abcdefghijklmnop")
    assert "sk-abcdefghijklmnop" not in caplog.text and "[redacted]" in caplog.text


def test_a_key_echoed_in_base64_is_redacted_too() -> None:
    """A server that puts the key into its error as base64 (of the key, of `user:key`, of a
    header line; URL-safe or not) does not carry it into the log."""
    import base64

    key = "plain-echo-token-0123456789abcdef"
    remember_secret(key)
    for prefix in ("", "u:", "ab:", "Authorization: Bearer "):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            echoed = encode((prefix + key).encode()).decode()
            clean = redact(f"bad credentials {echoed} rejected")
            assert echoed not in clean and "[redacted]" in clean
            # after the redaction, at most one group of four characters (and padding) of
            # the encoding is left: two bytes of the key at most
            tail = clean.split("[redacted]", 1)[1].removesuffix(" rejected")
            assert len(tail.rstrip("=")) < 4
