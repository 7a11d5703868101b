"""`doctor --check`, `backup list|create|restore`, and every command on a damaged store: one
clear line, a non-zero exit, and the file untouched."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store, default_store_path


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-x"}
    env.pop("TREECHAT_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", *args],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        first = Session("s1", "First", None, "m", 1.0, updated_at=1.0)
        store.call(lambda r: r.create_session(first))
        nodes, prev = [], None
        for i in range(3000):
            nodes.append(
                Node(id=f"n{i}", seq=0, created_at=1.0, session_id="s1",
                     role="user" if i % 2 == 0 else "assistant",
                     output=f"message {i} " + os.urandom(300).hex(), predecessor=prev)
            )
            prev = f"n{i}"
        store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), prev), 2.0))
    return data


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


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
