"""`treechat backup list|create|restore`: a backup made, listed and put back in place of a
ruined store (which is kept beside it); a backup that is not there is one line."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.cli_runner import run_cli, seed_long_chat

from treechat.store.database import default_store_path


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return seed_long_chat(tmp_path / "data")


def test_backup_create_list_restore(data_dir: Path) -> None:
    made = run_cli("backup", "create", "--data-dir", str(data_dir))
    assert made.returncode == 0, made.stderr
    assert "Backup written:" in made.stdout
    listed = run_cli("backup", "list", "--data-dir", str(data_dir))
    (line,) = listed.stdout.strip().splitlines()
    name = line.split()[0]
    assert name.startswith("treechat-") and name.endswith("-manual.duckdb")

    path = default_store_path(data_dir)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # ruin the store
    restored = run_cli("backup", "restore", "latest", "--data-dir", str(data_dir))
    assert restored.returncode == 0, restored.stderr
    assert "kept as" in restored.stdout
    check = run_cli("doctor", "--check", "--data-dir", str(data_dir))
    assert check.returncode == 0 and "nodes            3,000 rows" in check.stdout
    assert list(data_dir.glob("treechat.duckdb.before-restore-*"))


def test_restore_of_a_missing_backup_is_one_line(data_dir: Path) -> None:
    out = run_cli("backup", "restore", "nope", "--data-dir", str(data_dir))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert out.stderr.startswith("treechat: ")
