"""read_file, list_dir and search_text, confined to the workspace folder the user chose.

Absolute paths, `..` components and symbolic links that lead out of the folder are refused
with an error the model can read; nothing outside the folder is ever read. The check is made
on the file actually opened (its descriptor's real path), so a link swapped in between a
check and the open cannot escape. Reads are bounded in bytes, regular expressions in time.
"""

from __future__ import annotations

import asyncio
import contextlib
import fnmatch
import io
import os
import stat
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO, Any

import regex

from treechat.tools.base import JSONSchema, Tool, ToolError, ToolResult, object_schema

# Limits keep one call from flooding the context or stalling the turn.
READ_DEFAULT_LINES = 500
READ_MAX_LINES = 5000
READ_MAX_CHARS = 100_000
LIST_MAX_ENTRIES = 500
SEARCH_MAX_MATCHES = 200
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_FILE_BYTES = 2_000_000
SEARCH_LINE_CHARS = 300
PATTERN_MAX_CHARS = 1000
BINARY_SNIFF_BYTES = 8192
# A search gives up after this long, however the pattern is written: the `regex` engine
# checks the deadline while it backtracks, and releases the GIL while it matches.
SEARCH_TIME_LIMIT_S = 10.0
# read_file reads at most this many characters of one line at a time: a file with one
# gigabyte-long "line" costs what a short one does.
READ_CHUNK_CHARS = 65_536
# ...and skips at most this much to reach `start_line`: further in is another tool's job.
READ_SKIP_MAX_CHARS = 64_000_000

# Directories that are tooling state rather than the user's content; searching them is slow
# and the hits are noise.
SEARCH_SKIPPED_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox",
    }
)


class Workspace:
    """The folder the user chose; turns a model-supplied relative path into a safe real path."""

    def __init__(self, folder: Path | str) -> None:
        root = Path(folder).expanduser().resolve()
        if not root.is_dir():
            raise NotADirectoryError(f"workspace folder {root} is not a directory")
        self.root = root

    def resolve(self, path: object) -> Path:
        """The real path for `path`, relative to the workspace; ToolError when it may not be used.

        The check is done on the fully resolved path, so a symbolic link anywhere along the
        way that points out of the folder is caught, however it is spelled.
        """
        if path is None:
            path = "."
        if not isinstance(path, str):
            raise ToolError("path must be a string")
        text = path.strip() or "."
        if "\x00" in text:
            raise ToolError("path contains a NUL character")
        if (
            text.startswith("~")
            or PurePosixPath(text).is_absolute()
            or PureWindowsPath(text).drive
            or PureWindowsPath(text).root
        ):
            raise ToolError(
                f"absolute paths are not allowed ({path!r}); "
                "give a path relative to the workspace folder"
            )
        parts = PureWindowsPath(text).parts if os.name == "nt" else PurePosixPath(text).parts
        if ".." in parts:
            raise ToolError(
                f"'..' is not allowed in paths ({path!r}); paths stay inside the workspace folder"
            )
        try:
            real = (self.root / text).resolve()
        except (OSError, RuntimeError) as exc:  # a loop of links, or one changing right now
            raise ToolError(f"{path!r} cannot be followed: {exc}") from None
        if not self.contains(real):
            raise ToolError(
                f"{path!r} leads outside the workspace folder through a symbolic link; refused"
            )
        if not real.exists():
            raise ToolError(f"no such file or directory: {path!r}")
        return real

    def contains(self, real: Path) -> bool:
        return real == self.root or real.is_relative_to(self.root)

    def relative(self, real: Path) -> str:
        rel = real.relative_to(self.root).as_posix()
        return rel if rel else "."

    def open_checked(self, real: Path, *, directory: bool = False) -> int:
        """Open `real` and check the file that was opened is inside the workspace: the check
        and the open are one act. A descriptor; the caller closes it."""
        flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
        if directory:
            flags |= getattr(os, "O_DIRECTORY", 0)
        try:
            fd = os.open(real, flags)
        except OSError as exc:
            raise ToolError(f"cannot open {self._shown(real)}: {exc.strerror or exc}") from None
        try:
            opened = descriptor_path(fd, real)
            if opened is None or not self.contains(opened):
                raise ToolError(
                    f"{self._shown(real)} leads outside the workspace folder; refused"
                )
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _shown(self, real: Path) -> str:
        try:
            return repr(self.relative(real))
        except ValueError:
            return "the path"


def descriptor_path(fd: int, fallback: Path) -> Path | None:
    """The real path of the file open on `fd`; None when it cannot be told.

    Linux names it in /proc/self/fd, macOS through F_GETPATH. Elsewhere the path is resolved
    again and must lead to the very file the descriptor holds (same device and inode)."""
    proc = f"/proc/self/fd/{fd}"
    if sys.platform.startswith("linux") and os.path.exists(proc):
        return Path(os.readlink(proc))
    if sys.platform == "darwin":
        import fcntl

        with contextlib.suppress(OSError):
            raw = fcntl.fcntl(fd, getattr(fcntl, "F_GETPATH", 50), b"\0" * 1024)
            return Path(raw.split(b"\0", 1)[0].decode("utf-8", "surrogateescape"))
    try:
        real = fallback.resolve(strict=True)
        held, there = os.fstat(fd), os.stat(real)
    except (OSError, RuntimeError):
        return None
    return real if (held.st_dev, held.st_ino) == (there.st_dev, there.st_ino) else None


def shown_name(name: str) -> str:
    """A file name as one line of tool output: control characters (a newline could forge a
    line of output), and bytes that are not UTF-8, are escaped, and the name is quoted."""
    if all(c.isprintable() for c in name):
        return name
    escaped = "".join(
        c if c.isprintable() else c.encode("unicode_escape", "backslashreplace").decode("ascii")
        if not 0xDC80 <= ord(c) <= 0xDCFF
        else f"\\x{ord(c) - 0xDC00:02x}"
        for c in name
    )
    return f'"{escaped}"'


def _text_reader(fd: int) -> IO[str]:
    """A text reader over `fd` (which it takes over) that decodes as it reads."""
    raw = io.FileIO(fd, "rb", closefd=True)
    return io.TextIOWrapper(
        io.BufferedReader(raw), encoding="utf-8-sig", errors="replace", newline=None
    )


def _regular_file(fd: int, rel: str) -> os.stat_result:
    info = os.fstat(fd)
    if stat.S_ISDIR(info.st_mode):
        raise ToolError(f"{rel!r} is a directory; use list_dir")
    if not stat.S_ISREG(info.st_mode):
        raise ToolError(f"{rel!r} is not a regular file")
    return info


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


@dataclass(frozen=True, slots=True)
class ReadFile:
    """Read a text file in the workspace, a window of lines at a time."""

    workspace: Workspace
    name: str = "read_file"
    description: str = (
        "Read a text file in the workspace folder. Paths are relative to the workspace. "
        f"Returns up to max_lines lines (default {READ_DEFAULT_LINES}) starting at start_line."
    )

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "path": {"type": "string", "description": "File path relative to the workspace."},
                "start_line": {
                    "type": "integer",
                    "description": "First line to return, counting from 1.",
                    "minimum": 1,
                },
                "max_lines": {
                    "type": "integer",
                    "description": f"How many lines to return (at most {READ_MAX_LINES}).",
                    "minimum": 1,
                    "maximum": READ_MAX_LINES,
                },
            },
            required=["path"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return await asyncio.to_thread(self._read, args)

    def _read(self, args: Mapping[str, Any]) -> ToolResult:
        real = self.workspace.resolve(args.get("path"))
        rel = self.workspace.relative(real)
        if real.is_dir():
            raise ToolError(f"{rel!r} is a directory; use list_dir")
        start = int(args.get("start_line") or 1)
        count = int(args.get("max_lines") or READ_DEFAULT_LINES)
        fd = self.workspace.open_checked(real)
        try:
            size = _regular_file(fd, rel).st_size
            head = os.read(fd, BINARY_SNIFF_BYTES)
            os.lseek(fd, 0, os.SEEK_SET)
            if _is_binary(head):
                raise ToolError(f"{rel!r} is a binary file ({size} bytes); read_file reads text")
        except BaseException:
            os.close(fd)
            raise
        with _text_reader(fd) as handle:
            return ToolResult.success(_read_window(handle, rel, start, count))


def _read_window(handle: IO[str], rel: str, start: int, count: int) -> str:
    """Lines `start`.. of the file, at most `count` of them and `READ_MAX_CHARS` characters.
    Every read is bounded (`readline(n)`), so one enormous line costs no more memory than
    the characters shown."""
    number = 1
    skipped = 0
    while number < start:  # skip whole lines, a chunk at a time
        piece = handle.readline(READ_CHUNK_CHARS)
        if not piece:
            raise ToolError(f"{rel!r} has fewer than {start} lines")
        skipped += len(piece)
        if skipped > READ_SKIP_MAX_CHARS:
            raise ToolError(
                f"line {start} of {rel!r} is more than {READ_SKIP_MAX_CHARS:,} characters "
                "into the file (its lines are very long); read_file does not read that far"
            )
        if piece.endswith("\n"):
            number += 1
    lines: list[str] = []
    chars = 0
    more = cut_line = False
    while True:
        room = READ_MAX_CHARS - chars
        if len(lines) >= count or room <= 0:
            more = bool(handle.read(1))
            break
        piece = handle.readline(room + 1)
        if not piece:
            break
        if len(piece) > room:  # this line does not fit in what is left
            more = True
            if not lines:  # a single line longer than the limit: show its beginning
                lines.append(piece[:room])
                cut_line = True
            break
        lines.append(piece)
        chars += len(piece)
    if not lines:
        if start == 1:
            return f"[{rel} is empty]"
        raise ToolError(f"{rel!r} has fewer than {start} lines")
    last = start + len(lines) - 1
    text = "".join(lines)
    if cut_line:
        return text + (
            f"\n[line {last} of {rel} is longer than {READ_MAX_CHARS} characters: its "
            f"beginning is shown; call read_file with start_line={last + 1} for what follows]"
        )
    if more:
        reason = (
            "line limit" if len(lines) >= count else f"size limit of {READ_MAX_CHARS} characters"
        )
        text += (
            ("" if text.endswith("\n") else "\n")
            + f"[lines {start}-{last} of {rel} shown ({reason}); more follows: "
            f"call read_file with start_line={last + 1}]"
        )
    return text


@dataclass(frozen=True, slots=True)
class ListDir:
    """List one directory of the workspace (not recursive)."""

    workspace: Workspace
    name: str = "list_dir"
    description: str = (
        "List the entries of a directory in the workspace folder (not recursive). "
        "Directories end with '/'; files show their size in bytes."
    )

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "path": {
                    "type": "string",
                    "description": "Directory relative to the workspace; '.' is the workspace.",
                },
            }
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return await asyncio.to_thread(self._list, args)

    def _list(self, args: Mapping[str, Any]) -> ToolResult:
        real = self.workspace.resolve(args.get("path", "."))
        rel = self.workspace.relative(real)
        if not real.is_dir():
            raise ToolError(f"{rel!r} is not a directory; use read_file")
        dirs: list[str] = []
        files: list[str] = []
        for entry in _scan(self.workspace, real):
            name = shown_name(entry.name)
            try:
                if entry.is_symlink():
                    target = _link_target(Path(entry.path))
                    if target is None:
                        files.append(f"{name} -> (broken link, or a loop of links)")
                    elif not self.workspace.contains(target):
                        files.append(f"{name} -> (outside the workspace, not followed)")
                    elif target.is_dir():
                        dirs.append(f"{name}/ -> {shown_name(self.workspace.relative(target))}")
                    elif target.is_file():
                        size = target.stat().st_size
                        where = shown_name(self.workspace.relative(target))
                        files.append(f"{name} ({size} bytes) -> {where}")
                    else:
                        files.append(f"{name} -> (not a file or directory)")
                elif entry.is_dir(follow_symlinks=False):
                    dirs.append(f"{name}/")
                else:
                    files.append(f"{name} ({entry.stat(follow_symlinks=False).st_size} bytes)")
            except OSError:  # vanished while listing, or unreadable: say so, go on
                files.append(f"{name} (cannot be read)")
        listing = sorted(dirs, key=str.casefold) + sorted(files, key=str.casefold)
        total = len(listing)
        if total == 0:
            return ToolResult.success(f"[{rel} is empty]")
        shown = listing[:LIST_MAX_ENTRIES]
        header = f"{shown_name(rel)}: {len(dirs)} directories, {len(files)} files"
        text = header + "\n" + "\n".join(shown)
        if total > LIST_MAX_ENTRIES:
            text += f"\n[{total - LIST_MAX_ENTRIES} more entries not shown]"
        return ToolResult.success(text)


def _scan(workspace: Workspace, real: Path) -> Iterator[_Entry]:
    """The entries of the directory actually opened after the confinement check: scanning
    its descriptor means a directory swapped for a link meanwhile is not the one listed. The
    descriptor stays open while the entries are looked at (their stat goes through it)."""
    if os.scandir in os.supports_fd:
        fd = workspace.open_checked(real, directory=True)
        try:
            with os.scandir(fd) as entries:
                for entry in entries:
                    yield _Entry(entry, real)
        finally:
            os.close(fd)
        return
    with os.scandir(real) as entries:
        for entry in entries:
            yield _Entry(entry, real)


class _Entry:
    """A DirEntry read through a directory descriptor, with its path under the workspace."""

    def __init__(self, entry: os.DirEntry[str], folder: Path) -> None:
        self._entry = entry
        self.name = entry.name
        self.path = str(folder / entry.name)

    def is_symlink(self) -> bool:
        return self._entry.is_symlink()

    def is_dir(self, *, follow_symlinks: bool = True) -> bool:
        return self._entry.is_dir(follow_symlinks=follow_symlinks)

    def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
        return self._entry.stat(follow_symlinks=follow_symlinks)


def _link_target(path: Path) -> Path | None:
    """Where a link finally leads; None for a broken link or a loop of links."""
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):  # RuntimeError: a loop, on Python before 3.13
        return None


@dataclass(frozen=True, slots=True)
class SearchText:
    """Find lines containing a text or regular expression in the workspace's text files."""

    workspace: Workspace
    name: str = "search_text"
    description: str = (
        "Search the text files of the workspace folder for a string (or a regular expression "
        "with regex=true). Returns matching lines as path:line: text, "
        f"at most {SEARCH_MAX_MATCHES} matches."
    )

    @property
    def parameters(self) -> JSONSchema:
        return object_schema(
            {
                "pattern": {"type": "string", "description": "Text to look for."},
                "path": {
                    "type": "string",
                    "description": "File or directory to search, relative to the workspace.",
                },
                "glob": {
                    "type": "string",
                    "description": "Only search files whose name matches, e.g. '*.py'.",
                },
                "regex": {
                    "type": "boolean",
                    "description": "Treat pattern as a Python regular expression.",
                },
                "case_sensitive": {
                    "type": "boolean",
                    "description": "Match case exactly (default false).",
                },
            },
            required=["pattern"],
        )

    async def call(self, args: Mapping[str, Any]) -> ToolResult:
        return await asyncio.to_thread(self._search, args)

    def _search(self, args: Mapping[str, Any]) -> ToolResult:
        pattern = str(args["pattern"])
        if not pattern:
            raise ToolError("pattern must not be empty")
        if len(pattern) > PATTERN_MAX_CHARS:
            raise ToolError(f"pattern is longer than {PATTERN_MAX_CHARS} characters")
        flags = 0 if args.get("case_sensitive") else regex.IGNORECASE
        try:
            matcher = regex.compile(pattern if args.get("regex") else regex.escape(pattern), flags)
        except regex.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from exc
        glob = args.get("glob") or None
        start = self.workspace.resolve(args.get("path", "."))
        deadline = time.monotonic() + SEARCH_TIME_LIMIT_S
        matches: list[str] = []
        files_with_hits = 0
        scanned = 0
        stopped = ""
        for shown, real in self._files(start):
            if glob is not None and not fnmatch.fnmatch(shown.name, glob):
                continue
            scanned += 1
            if scanned > SEARCH_MAX_FILES:
                stopped = f"stopped after scanning {SEARCH_MAX_FILES} files"
                break
            try:
                hits = self._search_file(
                    shown, real, matcher, SEARCH_MAX_MATCHES - len(matches), deadline
                )
            except TimeoutError:
                stopped = (
                    f"stopped after the time limit of {SEARCH_TIME_LIMIT_S:.0f} s (a pattern "
                    "that backtracks a lot, or a large folder)"
                )
                break
            if hits:
                files_with_hits += 1
                matches.extend(hits)
            if len(matches) >= SEARCH_MAX_MATCHES:
                stopped = f"stopped after {SEARCH_MAX_MATCHES} matches"
                break
        where = shown_name(self.workspace.relative(start))
        if not matches:
            suffix = f" ({stopped})" if stopped else ""
            return ToolResult.success(f"no matches for {pattern!r} in {where}{suffix}")
        footer = f"[{len(matches)} matches in {files_with_hits} files"
        footer += f"; {stopped}: narrow the search with path or glob]" if stopped else "]"
        return ToolResult.success("\n".join([*matches, footer]))

    def _files(self, start: Path) -> Iterator[tuple[Path, Path]]:
        """(path as the model should see it, real path to read) for each candidate file."""
        if start.is_file():
            yield start, start
            return
        # followlinks=False: a linked directory is never entered, which rules out both
        # escapes and cycles; linked files are checked one by one below (a link that loops
        # or is broken is skipped, the rest of the search goes on).
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SEARCH_SKIPPED_DIRS)
            for filename in sorted(filenames):
                path = Path(dirpath) / filename
                if path.is_symlink():
                    target = _link_target(path)
                    if target is None or not self.workspace.contains(target):
                        continue
                    if target.is_file():
                        yield path, target
                elif path.is_file():
                    yield path, path

    def _search_file(
        self,
        shown: Path,
        real: Path,
        matcher: regex.Pattern[str],
        budget: int,
        deadline: float,
    ) -> list[str]:
        try:
            fd = self.workspace.open_checked(real)
        except ToolError:  # swapped for a link out of the folder since the walk saw it
            return []
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_size > SEARCH_MAX_FILE_BYTES:
                os.close(fd)
                return []
            head = os.read(fd, BINARY_SNIFF_BYTES)
            os.lseek(fd, 0, os.SEEK_SET)
        except OSError:
            os.close(fd)
            return []
        if _is_binary(head):
            os.close(fd)
            return []
        rel = shown_name(shown.relative_to(self.workspace.root).as_posix())
        hits: list[str] = []
        try:
            with _text_reader(fd) as handle:
                for number, line in enumerate(handle, start=1):
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise TimeoutError
                    # concurrent: the match runs without the GIL, so the window stays live
                    if matcher.search(line, timeout=left, concurrent=True):
                        text = line.rstrip("\r\n")
                        if len(text) > SEARCH_LINE_CHARS:
                            text = text[:SEARCH_LINE_CHARS] + "…"
                        hits.append(f"{rel}:{number}: {text}")
                        if len(hits) >= budget:
                            break
        except TimeoutError:  # an OSError too, but this one ends the whole search
            raise
        except OSError:
            # An unreadable file (permissions, vanished mid-walk) should not end the search.
            return []
        return hits


def file_tools(workspace: Workspace) -> tuple[Tool, ...]:
    """The three file tools bound to one workspace folder."""
    return (ReadFile(workspace), ListDir(workspace), SearchText(workspace))
