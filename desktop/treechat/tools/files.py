"""read_file, list_dir and search_text, confined to the workspace folder the user chose.

Absolute paths, `..` components and symbolic links that lead out of the folder are refused
with an error the model can read; nothing outside the folder is ever opened.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Any

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
        real = (self.root / text).resolve()
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
        if not real.is_file():
            raise ToolError(f"{rel!r} is not a regular file")
        start = int(args.get("start_line") or 1)
        count = int(args.get("max_lines") or READ_DEFAULT_LINES)
        size = real.stat().st_size
        with real.open("rb") as raw:
            if _is_binary(raw.read(BINARY_SNIFF_BYTES)):
                raise ToolError(f"{rel!r} is a binary file ({size} bytes); read_file reads text")
        lines: list[str] = []
        chars = 0
        last = start - 1
        more = False
        cut_by_chars = False
        with real.open("r", encoding="utf-8-sig", errors="replace", newline=None) as handle:
            for number, line in enumerate(handle, start=1):
                if number < start:
                    continue
                if len(lines) >= count:
                    more = True
                    break
                if chars + len(line) > READ_MAX_CHARS and lines:
                    more = cut_by_chars = True
                    break
                lines.append(line[:READ_MAX_CHARS])
                chars += len(line)
                last = number
        if not lines:
            if start == 1:
                return ToolResult.success(f"[{rel} is empty]")
            raise ToolError(f"{rel!r} has fewer than {start} lines")
        text = "".join(lines)
        if more:
            reason = f"size limit of {READ_MAX_CHARS} characters" if cut_by_chars else "line limit"
            text += (
                ("" if text.endswith("\n") else "\n")
                + f"[lines {start}-{last} of {rel} shown ({reason}); more follows: "
                f"call read_file with start_line={last + 1}]"
            )
        return ToolResult.success(text)


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
        with os.scandir(real) as entries:
            for entry in entries:
                if entry.is_symlink():
                    target = Path(entry.path).resolve()
                    if not self.workspace.contains(target):
                        files.append(f"{entry.name} -> (outside the workspace, not followed)")
                        continue
                    if target.is_dir():
                        dirs.append(f"{entry.name}/ -> {self.workspace.relative(target)}")
                    elif target.is_file():
                        size = target.stat().st_size
                        where = self.workspace.relative(target)
                        files.append(f"{entry.name} ({size} bytes) -> {where}")
                    else:
                        files.append(f"{entry.name} -> (broken link)")
                elif entry.is_dir():
                    dirs.append(f"{entry.name}/")
                else:
                    files.append(f"{entry.name} ({entry.stat().st_size} bytes)")
        listing = sorted(dirs, key=str.casefold) + sorted(files, key=str.casefold)
        total = len(listing)
        if total == 0:
            return ToolResult.success(f"[{rel} is empty]")
        shown = listing[:LIST_MAX_ENTRIES]
        header = f"{rel}: {len(dirs)} directories, {len(files)} files"
        text = header + "\n" + "\n".join(shown)
        if total > LIST_MAX_ENTRIES:
            text += f"\n[{total - LIST_MAX_ENTRIES} more entries not shown]"
        return ToolResult.success(text)


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
        flags = 0 if args.get("case_sensitive") else re.IGNORECASE
        try:
            matcher = re.compile(pattern if args.get("regex") else re.escape(pattern), flags)
        except re.error as exc:
            raise ToolError(f"invalid regular expression: {exc}") from exc
        glob = args.get("glob") or None
        start = self.workspace.resolve(args.get("path", "."))
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
            hits = self._search_file(shown, real, matcher, SEARCH_MAX_MATCHES - len(matches))
            if hits:
                files_with_hits += 1
                matches.extend(hits)
            if len(matches) >= SEARCH_MAX_MATCHES:
                stopped = f"stopped after {SEARCH_MAX_MATCHES} matches"
                break
        where = self.workspace.relative(start)
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
        # escapes and cycles; linked files are checked one by one below.
        for dirpath, dirnames, filenames in os.walk(start, followlinks=False):
            dirnames[:] = sorted(d for d in dirnames if d not in SEARCH_SKIPPED_DIRS)
            for filename in sorted(filenames):
                path = Path(dirpath) / filename
                if path.is_symlink():
                    target = path.resolve()
                    if not self.workspace.contains(target) or not target.is_file():
                        continue
                    yield path, target
                elif path.is_file():
                    yield path, path

    def _search_file(
        self, shown: Path, real: Path, matcher: re.Pattern[str], budget: int
    ) -> list[str]:
        try:
            if real.stat().st_size > SEARCH_MAX_FILE_BYTES:
                return []
            with real.open("rb") as raw:
                if _is_binary(raw.read(BINARY_SNIFF_BYTES)):
                    return []
            rel = shown.relative_to(self.workspace.root).as_posix()
            hits: list[str] = []
            with real.open("r", encoding="utf-8", errors="replace") as handle:
                for number, line in enumerate(handle, start=1):
                    if matcher.search(line):
                        text = line.rstrip("\r\n")
                        if len(text) > SEARCH_LINE_CHARS:
                            text = text[:SEARCH_LINE_CHARS] + "…"
                        hits.append(f"{rel}:{number}: {text}")
                        if len(hits) >= budget:
                            break
            return hits
        except OSError:
            # An unreadable file (permissions, vanished mid-walk) should not end the search.
            return []


def file_tools(workspace: Workspace) -> tuple[Tool, ...]:
    """The three file tools bound to one workspace folder."""
    return (ReadFile(workspace), ListDir(workspace), SearchText(workspace))
