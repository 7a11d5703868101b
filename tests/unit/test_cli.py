"""The command line's parsing: `--data-dir` after any subcommand, and ordinary bad input (bytes
that are not UTF-8, an empty or ambiguous session, a folder that does not exist) answered
with one line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from treechat import cli
from treechat.core.model import Session
from treechat.store.database import Store, default_store_path


def run_cli(*args: str | bytes, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    env.pop("TREECHAT_DATA_DIR", None)
    return subprocess.run(
        [sys.executable, "-m", "treechat.cli", *args],
        capture_output=True,
        input=stdin,
        env=env,
        timeout=300,
        check=False,
    )


def subcommands() -> list[str]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if a.dest == "command")
    return sorted(action.choices)  # type: ignore[arg-type]


@pytest.mark.parametrize("command", subcommands())
def test_every_subcommand_takes_data_dir_after_its_name(command: str) -> None:
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]  # type: ignore[index]
    assert any("--data-dir" in a.option_strings for a in sub._actions), command


def test_data_dir_after_the_subcommand_is_the_one_used(tmp_path: Path) -> None:
    parser = cli.build_parser()
    after = parser.parse_args(["import", "x.json", "--data-dir", str(tmp_path / "a")])
    assert after.data_dir == str(tmp_path / "a")
    before = parser.parse_args(["--data-dir", str(tmp_path / "b"), "import", "x.json"])
    assert before.data_dir == str(tmp_path / "b")
    nested = parser.parse_args(["backup", "list", "--data-dir", str(tmp_path / "c")])
    assert nested.data_dir == str(tmp_path / "c")


def test_import_with_data_dir_after_the_file_runs(tmp_path: Path) -> None:
    """The exact command the README promises, which used to stop at "unrecognized arguments"."""
    export = tmp_path / "empty.json"
    export.write_text("[]")
    out = run_cli("import", str(export), "--data-dir", str(tmp_path / "data"))
    assert b"unrecognized arguments" not in out.stderr
    assert default_store_path(tmp_path / "data").exists()


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        for sid, title in (("abc111", "One"), ("abc222", "Two")):
            session = Session(sid, title, None, "m", 1.0, updated_at=1.0)
            store.call(lambda r, s=session: r.create_session(s))  # type: ignore[misc]
    return data


def one_line_error(out: subprocess.CompletedProcess[bytes]) -> str:
    text = out.stderr.decode("utf-8", "replace")
    assert out.returncode != 0
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.startswith("treechat")]
    assert lines, text
    return lines[-1]


def test_non_utf8_bytes_in_argv(data_dir: Path) -> None:
    out = run_cli(b"send", b"\xff\xfeabc", b"hello", b"--data-dir", str(data_dir).encode())
    assert "not valid UTF-8" in one_line_error(out)
    out = run_cli(b"export", b"abc\xff", b"--data-dir", str(data_dir).encode())
    assert "not valid UTF-8" in one_line_error(out)


@pytest.mark.parametrize("text", ["   ", "\n\t  \n"])
def test_a_whitespace_only_message_sends_nothing(data_dir: Path, text: str) -> None:
    out = run_cli("send", "abc111", text, "--data-dir", str(data_dir))
    assert "empty" in one_line_error(out)
    with Store.open(default_store_path(data_dir)) as store:
        assert store.call(lambda r: r.node_count()) == 0


def test_an_ambiguous_session_prefix(data_dir: Path) -> None:
    out = run_cli("export", "abc", "--data-dir", str(data_dir))
    assert "more than one session" in one_line_error(out)


def test_an_empty_session_prefix(data_dir: Path) -> None:
    out = run_cli("export", "", "--data-dir", str(data_dir))
    assert "SESSION" in one_line_error(out) or "session is empty" in one_line_error(out)
    out = run_cli("send", "", "hello", "--data-dir", str(data_dir))
    assert "the session is empty" in one_line_error(out)


def test_export_into_a_missing_folder(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "folder" / "out.md"
    out = run_cli("export", "abc111", "-o", str(target), "--data-dir", str(data_dir))
    line = one_line_error(out)
    assert "cannot use" in line and "No such file or directory" in line
    assert not target.parent.exists()


def test_send_needs_a_message_from_somewhere(data_dir: Path) -> None:
    out = run_cli("send", "abc111", "--data-dir", str(data_dir))
    line = one_line_error(out)
    assert "SESSION" in line and "--file" in line


def test_send_refuses_a_file_that_is_not_text(data_dir: Path, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xff\xfe\x00garbage")
    out = run_cli("send", "abc111", "--file", str(blob), "--data-dir", str(data_dir))
    assert "not UTF-8 text" in one_line_error(out)
    out = run_cli("send", "abc111", "--file", str(tmp_path / "missing.txt"), "--data-dir",
                  str(data_dir))
    assert "cannot read" in one_line_error(out)
