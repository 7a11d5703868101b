"""`treechat doctor` and `doctor --check`: every table read back and its checksums verified;
on a damaged store every command says so once, in one line, shows what can still be read,
and leaves the file untouched."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from tests.support.cli_runner import run_cli, seed_long_chat

from treechat.store.database import default_store_path
from treechat.store.schema import SCHEMA_VERSION


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return seed_long_chat(tmp_path / "data")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_doctor_says_where_the_store_is_and_what_it_holds(data_dir: Path) -> None:
    out = run_cli("doctor", "--data-dir", str(data_dir))
    assert out.returncode == 0, out.stderr
    lines = dict(line.split(":", 1) for line in out.stdout.splitlines()[1:])
    assert lines["store"].strip() == str(default_store_path(data_dir))
    assert lines["schema version"].strip() == str(SCHEMA_VERSION)
    assert (lines["chats"].strip(), lines["nodes"].strip()) == ("1", "3000")
    assert lines["opened in"].strip().endswith(" ms")


def test_doctor_check_reads_every_table(data_dir: Path) -> None:
    out = run_cli("doctor", "--check", "--data-dir", str(data_dir))
    assert out.returncode == 0, out.stderr
    assert "nodes            3,000 rows" in out.stdout
    assert "integrity:      ok" in out.stdout


@pytest.mark.parametrize("fraction", [0.5, 0.9])
def test_commands_on_a_truncated_store(data_dir: Path, fraction: float) -> None:
    path = default_store_path(data_dir)
    os.truncate(path, int(path.stat().st_size * fraction))
    before = digest(path)

    out = run_cli("doctor", "--check", "--data-dir", str(data_dir))
    assert out.returncode == 1 and "integrity:      FAILED: it is truncated" in out.stdout
    assert "treechat backup restore" in out.stderr

    for args in (["context", "s1"], ["send", "s1", "hello"], ["sessions"]):
        out = run_cli(*args, "--data-dir", str(data_dir))
        assert "Traceback" not in out.stderr, (args, out.stderr)
        assert out.returncode != 0, args
        assert "is damaged" in out.stderr, (args, out.stderr)
        assert out.stderr.count("is damaged") == 1, (args, out.stderr)  # said once
    # what can still be read is shown, read-only, under the warning
    out = run_cli("ledger", "--data-dir", str(data_dir))
    assert out.returncode == 0 and "No requests recorded yet." in out.stdout
    assert "is damaged" in out.stderr and "will not write" in out.stderr
    assert digest(path) == before
