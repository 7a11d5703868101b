"""What every subcommand shares: a session named by id, prefix or title (an ambiguous, empty
or unknown one is one line), failures turned into one line and status 2, and the usage
row `ledger` and `usage` both print."""

from __future__ import annotations

import argparse
import errno
from pathlib import Path

import pytest
from tests.support.cli_runner import one_line_error, treechat

from treechat.cli._common import (
    CliInputError,
    count,
    find_session_id,
    result_limit,
    run_command,
    usage_record,
)
from treechat.core.model import Session
from treechat.store.database import Store, StoreError, default_store_path
from treechat.store.usage import LedgerRow, SpendRow


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        sessions = [Session(sid, title, None, "m", 1.0, updated_at=1.0)
                    for sid, title in (("abc111", "One"), ("abc222", "Two"))]
        store.call(lambda r: r.create_sessions(sessions))
    return data


def test_a_session_by_id_prefix_or_title(data_dir: Path) -> None:
    with Store.open(default_store_path(data_dir)) as store:
        assert find_session_id(store, "abc111") == "abc111"
        assert find_session_id(store, "abc2") == "abc222"
        assert find_session_id(store, "One") == "abc111"
        with pytest.raises(LookupError, match="treechat sessions"):
            find_session_id(store, "zzz")
        with pytest.raises(LookupError, match="no chat named"):
            find_session_id(store, "  ")


def test_an_ambiguous_session_prefix(data_dir: Path) -> None:
    assert "more than one chat" in one_line_error(treechat(data_dir, "export", "abc"))


def test_an_empty_session(data_dir: Path) -> None:
    line = one_line_error(treechat(data_dir, "export", ""))
    assert "give a chat" in line or "no chat named" in line
    assert "no chat named" in one_line_error(treechat(data_dir, "send", "", "hello"))


def test_export_into_a_missing_folder(data_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "no" / "such" / "folder" / "out.md"
    line = one_line_error(treechat(data_dir, "export", "abc111", "-o", str(target)))
    assert "cannot use" in line and "No such file or directory" in line
    assert not target.parent.exists()


@pytest.mark.parametrize(("failure", "said"), [
    (StoreError("the store is newer than this Treechat"), "the store is newer"),
    (LookupError("no session matches 'x'"), "no session matches 'x'"),
    (CliInputError("give --model or --models, not both"), "not both"),
    (FileNotFoundError(errno.ENOENT, "No such file or directory", "/nope"),
     "cannot use /nope: No such file or directory"),
    # a full disk is named as one, with what to do (not "cannot use: …" with no file)
    (OSError(errno.ENOSPC, "No space left on device"),
     "the disk is full (No space left on device); free some space and try again"),
])
def test_a_failure_is_one_line_and_status_2(
    failure: Exception, said: str, capsys: pytest.CaptureFixture[str]
) -> None:
    def command(args: argparse.Namespace) -> int:
        raise failure

    assert run_command(argparse.Namespace(handler=command)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("treechat: ") and said in err


def test_a_command_that_runs_through_gives_its_own_status() -> None:
    assert run_command(argparse.Namespace(handler=lambda args: 7)) == 7


def test_the_usage_row_is_the_same_for_a_model_and_a_day() -> None:
    model = LedgerRow("openai/gpt-4o", 2, 1000, 400, 100, 50, 0.0125, 0)
    day = SpendRow("2026-01-02", 2, 1000, 400, 100, 50, 0.0125, 1, 1.0, 2.0)
    assert usage_record(model) == {
        "requests": 2, "input_tokens": 1000, "cache_read": 400, "cache_write": 100,
        "output_tokens": 50, "cost_usd": 0.0125, "unpriced_requests": 0,
    }
    assert usage_record(day) == {**usage_record(model), "unpriced_requests": 1}


def test_counts_and_limits() -> None:
    assert (count(1, "branch"), count(2, "branch"), count(0, "node")) == (
        "1 branch", "2 branches", "0 nodes")
    assert result_limit(argparse.Namespace(limit=3)) == 3
    with pytest.raises(LookupError, match="at least 1"):
        result_limit(argparse.Namespace(limit=0))
