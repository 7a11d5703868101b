"""The problem report: the last log lines with keys scrubbed, and plain words when there is
no log file yet."""

from __future__ import annotations

from pathlib import Path

from treechat.services.problem_report import AppInfo, problem_report


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


def test_the_report_is_kept_beside_the_log_and_says_where_it_goes(tmp_path: Path) -> None:
    from treechat.services.problem_report import AppInfo, save_report, where_to_report

    info = AppInfo("1.0", tmp_path, tmp_path / "logs")
    saved = save_report(info, "Treechat 1.0\nthe report")
    assert saved.read_text(encoding="utf-8") == "Treechat 1.0\nthe report"
    assert saved.parent == info.log_dir
    tracker = where_to_report(saved, "https://tracker.example/treechat/issues")
    assert str(saved) in tracker and "new issue at https://tracker.example" in tracker
    nowhere = where_to_report(saved, None)
    assert str(saved) in nowhere and "names no place to report problems" in nowhere
    assert "whoever supports" not in nowhere


def _package(root: Path, name: str, *urls: str) -> str:
    """An installed package's metadata, as pip leaves it in site-packages."""
    info = root / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.1", f"Name: {name}", "Version: 1.0",
             *(f"Project-URL: {u}" for u in urls)]
    (info / "METADATA").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(root)


def test_the_place_to_report_is_the_packages_issue_tracker(tmp_path: Path) -> None:
    from treechat.services.problem_report import report_place

    with_tracker = _package(tmp_path / "a", "demo", "Homepage, https://demo.example",
                            "Issues, https://demo.example/issues")
    assert report_place("demo", [with_tracker]) == "https://demo.example/issues"
    without = _package(tmp_path / "b", "demo", "Homepage, https://demo.example")
    assert report_place("demo", [without]) is None
    assert report_place("not-installed-anywhere", [without]) is None

