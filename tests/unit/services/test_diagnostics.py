"""The problem report: the last log lines with keys scrubbed, and plain words when there is
no log file yet."""

from __future__ import annotations

from pathlib import Path

from treechat.services.diagnostics import AppInfo, problem_report


def test_no_log_file_yet_is_no_log_lines_not_an_error(tmp_path: Path) -> None:
    info = AppInfo.of(tmp_path)
    report = problem_report(info)
    assert report.startswith(f"Treechat {info.version}\n")
    assert report.rstrip().endswith("No log lines yet.")
    assert "could not be read" not in report


def test_the_last_lines_are_counted_and_an_unreadable_log_says_why(tmp_path: Path) -> None:
    info = AppInfo.of(tmp_path)
    info.log_dir.mkdir()
    (info.log_dir / "treechat.log").write_text("one\ntwo\nthree\n", encoding="utf-8")
    assert "Last 2 log lines:\ntwo\nthree\n" in problem_report(info, lines=2)
    (info.log_dir / "treechat.log").unlink()
    (info.log_dir / "treechat.log").mkdir()  # not a file: reading it fails
    assert "(the log could not be read: " in problem_report(info)
