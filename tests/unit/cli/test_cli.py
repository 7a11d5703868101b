"""The command line itself: a plain `treechat` goes straight to the window without loading
the subcommands' modules; `--data-dir` is taken after any subcommand; bytes that are not
UTF-8 are answered with one line, never a traceback."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest

import treechat
from treechat import cli
from treechat.cli import window_arguments
from treechat.store.database import default_store_path


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


def subcommand_parsers() -> dict[str, argparse.ArgumentParser]:
    parser = cli.build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@pytest.mark.parametrize("command", sorted(subcommand_parsers()))
def test_every_subcommand_takes_data_dir_after_its_name(command: str) -> None:
    sub = subcommand_parsers()[command]
    assert any("--data-dir" in a.option_strings for a in sub._actions), command


def test_every_subcommand_runs_a_command_of_its_own() -> None:
    handlers = {name: sub.get_default("handler") for name, sub in subcommand_parsers().items()}
    for name, handler in handlers.items():
        assert callable(handler), name
        assert handler.__module__.startswith("treechat.cli."), name
    args = cli.build_parser().parse_args(["ledger", "--json"])
    assert args.handler is handlers["ledger"]


def test_a_data_dir_that_is_a_file_is_one_line(tmp_path: Path) -> None:
    from tests.support.cli_runner import one_line_error, treechat

    a_file = tmp_path / "notes.txt"
    a_file.write_text("mine")
    line = one_line_error(treechat(a_file, "sessions"))
    assert line == (f"treechat: the data folder {a_file} is a file, not a folder; give "
                    "--data-dir a folder (it holds the store, the log, the backups)")
    assert a_file.read_text() == "mine"


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


def one_line_error(out: subprocess.CompletedProcess[bytes]) -> str:
    text = out.stderr.decode("utf-8", "replace")
    assert out.returncode != 0
    assert "Traceback" not in text
    lines = [line for line in text.splitlines() if line.startswith("treechat")]
    assert lines, text
    return lines[-1]


def test_non_utf8_bytes_in_argv(tmp_path: Path) -> None:
    """Refused while the arguments are read, before any store is opened."""
    out = run_cli(b"send", b"\xff\xfeabc", b"hello", b"--data-dir", str(tmp_path).encode())
    assert "not valid UTF-8" in one_line_error(out)
    out = run_cli(b"export", b"abc\xff", b"--data-dir", str(tmp_path).encode())
    assert "not valid UTF-8" in one_line_error(out)
    assert not default_store_path(tmp_path).exists()


def test_plain_launches_are_the_window() -> None:
    assert window_arguments([]) == []
    assert window_arguments(["--data-dir", "/tmp/d"]) == ["--data-dir", "/tmp/d"]
    assert window_arguments(["--data-dir=/tmp/d", "-reverse"]) == ["--data-dir=/tmp/d",
                                                                   "-reverse"]


def test_anything_else_goes_to_the_full_parser() -> None:
    for words in (["sessions"], ["--data-dir", "d", "send", "x"], ["--smoke"], ["--help"],
                  ["--version"], ["--data-dir"], ["-platform", "offscreen"]):
        assert window_arguments(words) is None, words


def test_the_window_path_loads_no_subcommand_module() -> None:
    code = (
        "import sys\n"
        "import treechat.cli as cli\n"
        "assert cli.window_arguments([]) == []\n"
        "print(sorted(m for m in sys.modules if m.startswith('treechat.cli.')"
        " or m in ('asyncio', 'json')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "['treechat.cli._common']"


def test_python_m_treechat_cli_is_the_command() -> None:
    done = subprocess.run([sys.executable, "-m", "treechat.cli", "--version"],
                          capture_output=True, text=True, timeout=120, check=False)
    assert (done.returncode, done.stdout.strip()) == (0, f"treechat {treechat.__version__}")
