"""What Help shows and copies: the version, where the data and the log live, and a problem
report (version, platform, the last lines of the log with every key scrubbed)."""

from __future__ import annotations

import platform
import sys
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from .. import __version__
from ..providers.keys import redact

LOG_FILENAME = "treechat.log"
REPORT_LINES = 200


@dataclass(frozen=True, slots=True)
class AppInfo:
    version: str
    data_dir: Path
    log_dir: Path

    @classmethod
    def of(cls, data_dir: Path) -> AppInfo:
        return cls(__version__, data_dir, data_dir / "logs")

    def platform_text(self) -> str:
        return f"{platform.system()} {platform.release()} ({platform.machine()}), " \
               f"Python {sys.version.split()[0]}"


def problem_report(info: AppInfo, lines: int = REPORT_LINES) -> str:
    """Plain text to paste into a report: nothing is sent anywhere. Reads the log file (call
    it off the GUI thread)."""
    log = info.log_dir / LOG_FILENAME
    tail: deque[str] = deque(maxlen=lines)
    problem = ""
    try:
        with log.open(encoding="utf-8", errors="replace") as f:
            tail.extend(line.rstrip("\n") for line in f)
    except FileNotFoundError:
        pass  # the log file is made by the first line logged: nothing went wrong yet
    except OSError as exc:
        problem = f"(the log could not be read: {exc.strerror or exc})"
    if tail:
        said = f"Last {len(tail)} log line{'s' if len(tail) != 1 else ''}:\n" + "\n".join(tail)
    else:
        said = problem or "No log lines yet."
    return redact(
        f"Treechat {info.version}\n"
        f"Platform: {info.platform_text()}\n"
        f"Data folder: {info.data_dir}\n"
        f"Log: {log}\n\n"
        f"{said}\n"
    )


REPORT_FILENAME = "problem-report.txt"
_TRACKER_LABELS = ("issues", "bug tracker", "bugs", "tracker", "support")


def report_place(distribution: str = "treechat", path: list[str] | None = None) -> str | None:
    """Where problems are reported, as the installed package names it (its `Project-URL`
    labelled Issues, Bug Tracker or Support, from `[project.urls]`); None when it names
    none. `path` is where to look for the package's metadata (default: `sys.path`)."""
    import importlib.metadata

    found = next(iter(importlib.metadata.distributions(
        name=distribution, path=path if path is not None else sys.path)), None)
    if found is None:
        return None
    for entry in found.metadata.get_all("Project-URL") or []:
        label, _, url = str(entry).partition(",")
        if label.strip().lower() in _TRACKER_LABELS and url.strip().startswith("https://"):
            return url.strip()
    return None


def save_report(info: AppInfo, text: str) -> Path:
    """The report kept beside the log as well, to attach where a paste is too long."""
    info.log_dir.mkdir(parents=True, exist_ok=True)
    path = info.log_dir / REPORT_FILENAME
    path.write_text(text, encoding="utf-8")
    return path


NO_PLACE = ("This copy of Treechat names no place to report problems: its package has no "
            "issue tracker address. Nothing is sent by Treechat itself; keep the file for "
            "whoever gave you this copy.")


def where_to_send(place: str | None) -> str:
    """Where the report goes, in words: the tracker's address, or plainly that there is none."""
    if place:
        return f"Open a new issue at {place} and paste the report into it, or attach the file. " \
               "Nothing is sent by Treechat itself."
    return NO_PLACE


def where_to_report(saved: Path, place: str | None) -> str:
    """What was made and where it goes, in one message."""
    return (f"A problem report (version, platform, the last log lines, keys removed) is on the "
            f"clipboard and saved as {saved}. {where_to_send(place)}")
