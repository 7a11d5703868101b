"""The workspace file tools on a real folder: what they return and what they refuse."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from treechat.tools import files
from treechat.tools.base import PROTECTED_TOOLS, ToolBox, ToolResult
from treechat.tools.files import Workspace, file_tools


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    secret = tmp_path / "outside"
    secret.mkdir()
    (secret / "secret.txt").write_text("TOP SECRET password=hunter2\n")
    return secret


@pytest.fixture
def root(tmp_path: Path, outside: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "src" / "pkg").mkdir(parents=True)
    (ws / "README.md").write_text("# Demo\nHello world\nsecond line\n")
    (ws / "src" / "main.py").write_text("def main():\n    print('hello')\n")
    (ws / "src" / "pkg" / "util.py").write_text("HELLO = 1\nother = 2\n")
    (ws / "blob.bin").write_bytes(b"\x00\x01\x02hello\x00")
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("hello from git internals\n")
    # Links: one escaping to a file, one escaping to a directory, one staying inside.
    (ws / "escape.txt").symlink_to(outside / "secret.txt")
    (ws / "escape_dir").symlink_to(outside, target_is_directory=True)
    (ws / "inner_link.md").symlink_to(ws / "README.md")
    return ws


@pytest.fixture
def box(root: Path) -> ToolBox:
    return ToolBox(file_tools(Workspace(root)))


async def call(box: ToolBox, name: str, **args: object) -> ToolResult:
    return await box.call(name, json.dumps(args))


@pytest.mark.asyncio
async def test_read_file_returns_the_text(box: ToolBox) -> None:
    result = await call(box, "read_file", path="README.md")
    assert result == ToolResult(True, "# Demo\nHello world\nsecond line\n")


@pytest.mark.asyncio
async def test_read_file_window_says_where_to_continue(box: ToolBox, root: Path) -> None:
    (root / "long.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    first = await call(box, "read_file", path="long.txt", max_lines=10)
    assert first.ok
    assert first.text.startswith("line 1\n")
    assert "line 10\n" in first.text and "line 11\n" not in first.text
    assert "start_line=11" in first.text
    rest = await call(box, "read_file", path="long.txt", start_line=95)
    assert rest.text == "".join(f"line {i}\n" for i in range(95, 101))
    past = await call(box, "read_file", path="long.txt", start_line=500)
    assert not past.ok and "fewer than 500 lines" in past.text


@pytest.mark.asyncio
async def test_read_file_caps_characters(box: ToolBox, root: Path) -> None:
    line = "x" * 999 + "\n"
    (root / "big.txt").write_text(line * 300)
    result = await call(box, "read_file", path="big.txt", max_lines=5000)
    assert result.ok
    assert len(result.text) < files.READ_MAX_CHARS + 500
    assert "more follows" in result.text


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "path",
    ["../outside/secret.txt", "src/../../outside/secret.txt", "src/../README.md", ".."],
)
async def test_traversal_is_refused(box: ToolBox, path: str) -> None:
    result = await call(box, "read_file", path=path)
    assert not result.ok
    assert "'..' is not allowed" in result.text
    assert "hunter2" not in result.text


@pytest.mark.asyncio
async def test_absolute_paths_are_refused(box: ToolBox, outside: Path, root: Path) -> None:
    for path in [str(outside / "secret.txt"), str(root / "README.md"), "~/x", "C:\\Windows\\x"]:
        result = await call(box, "read_file", path=path)
        assert not result.ok, path
        assert "absolute paths are not allowed" in result.text


@pytest.mark.asyncio
async def test_symlinks_out_of_the_folder_are_refused(box: ToolBox) -> None:
    for path in ["escape.txt", "escape_dir/secret.txt"]:
        result = await call(box, "read_file", path=path)
        assert not result.ok
        assert "outside the workspace folder" in result.text
        assert "hunter2" not in result.text
    listing = await call(box, "list_dir", path="escape_dir")
    assert not listing.ok and "outside the workspace folder" in listing.text


@pytest.mark.asyncio
async def test_symlink_inside_the_folder_is_followed(box: ToolBox) -> None:
    result = await call(box, "read_file", path="inner_link.md")
    assert result.ok and "Hello world" in result.text


@pytest.mark.asyncio
async def test_workspace_reached_through_a_link_still_confines(
    tmp_path: Path, root: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(root, target_is_directory=True)
    box = ToolBox(file_tools(Workspace(alias)))
    assert (await call(box, "read_file", path="README.md")).ok
    assert not (await call(box, "read_file", path="escape.txt")).ok


@pytest.mark.asyncio
async def test_binary_and_directories_and_missing(box: ToolBox) -> None:
    binary = await call(box, "read_file", path="blob.bin")
    assert not binary.ok and "binary file" in binary.text
    directory = await call(box, "read_file", path="src")
    assert not directory.ok and "list_dir" in directory.text
    missing = await call(box, "read_file", path="nope.txt")
    assert not missing.ok and "no such file" in missing.text


@pytest.mark.asyncio
async def test_list_dir_shows_dirs_first_and_marks_escaping_links(box: ToolBox) -> None:
    result = await call(box, "list_dir")
    assert result.ok
    assert result.text.splitlines() == [
        ".: 2 directories, 5 files",
        ".git/",
        "src/",
        "blob.bin (9 bytes)",
        "escape.txt -> (outside the workspace, not followed)",
        "escape_dir -> (outside the workspace, not followed)",
        "inner_link.md (31 bytes) -> README.md",
        "README.md (31 bytes)",
    ]
    assert "hunter2" not in result.text


@pytest.mark.asyncio
async def test_list_dir_caps_entries(box: ToolBox, root: Path) -> None:
    many = root / "many"
    many.mkdir()
    for i in range(files.LIST_MAX_ENTRIES + 7):
        (many / f"f{i:04d}.txt").write_text("")
    result = await call(box, "list_dir", path="many")
    assert result.ok
    assert result.text.endswith("[7 more entries not shown]")
    assert len(result.text.splitlines()) == files.LIST_MAX_ENTRIES + 2


@pytest.mark.asyncio
async def test_search_text_finds_lines_case_insensitively(box: ToolBox) -> None:
    result = await call(box, "search_text", pattern="hello")
    assert result.ok
    lines = result.text.splitlines()
    assert "README.md:2: Hello world" in lines
    assert "inner_link.md:2: Hello world" in lines
    assert "src/main.py:2:     print('hello')" in lines
    assert "src/pkg/util.py:1: HELLO = 1" in lines
    # Tool state, binaries and anything behind escaping links are not searched.
    assert not any(line.startswith((".git", "blob.bin", "escape")) for line in lines)
    assert "hunter2" not in result.text
    assert lines[-1] == "[4 matches in 4 files]"


@pytest.mark.asyncio
async def test_search_text_options(box: ToolBox) -> None:
    exact = await call(box, "search_text", pattern="HELLO", case_sensitive=True)
    assert exact.text.splitlines()[0] == "src/pkg/util.py:1: HELLO = 1"
    globbed = await call(box, "search_text", pattern="hello", glob="*.py", path="src")
    assert globbed.text.splitlines()[:2] == [
        "src/main.py:2:     print('hello')",
        "src/pkg/util.py:1: HELLO = 1",
    ]
    regex = await call(box, "search_text", pattern=r"^def \w+\(", regex=True)
    assert regex.text.splitlines()[0] == "src/main.py:1: def main():"
    bad = await call(box, "search_text", pattern="(", regex=True)
    assert not bad.ok and "invalid regular expression" in bad.text
    none = await call(box, "search_text", pattern="zebra")
    assert none == ToolResult(True, "no matches for 'zebra' in .")
    escaped = await call(box, "search_text", pattern="password", path="escape_dir")
    assert not escaped.ok and "outside the workspace folder" in escaped.text


@pytest.mark.asyncio
async def test_search_text_stops_at_the_match_limit(box: ToolBox, root: Path) -> None:
    (root / "many.txt").write_text("needle\n" * (files.SEARCH_MAX_MATCHES + 50))
    result = await call(box, "search_text", pattern="needle")
    lines = result.text.splitlines()
    assert len(lines) == files.SEARCH_MAX_MATCHES + 1
    assert "stopped after" in lines[-1]


@pytest.mark.asyncio
async def test_bad_arguments_are_tool_errors(box: ToolBox) -> None:
    missing = await box.call("read_file", "{}")
    assert missing == ToolResult(False, "read_file: missing required argument 'path'")
    wrong_type = await box.call("read_file", {"path": "README.md", "max_lines": "ten"})
    assert not wrong_type.ok and "must be integer" in wrong_type.text
    extra = await box.call("list_dir", {"path": ".", "recursive": True})
    assert not extra.ok and "unknown argument(s) recursive" in extra.text
    not_json = await box.call("read_file", "{path: README")
    assert not not_json.ok and "not valid JSON" in not_json.text
    unknown = await box.call("rm_rf", {})
    assert not unknown.ok and "available tools: list_dir, read_file, search_text" in unknown.text


def test_file_tools_are_not_protected(root: Path) -> None:
    names = {tool.name for tool in file_tools(Workspace(root))}
    assert names == {"read_file", "list_dir", "search_text"}
    assert not names & PROTECTED_TOOLS


def test_workspace_must_be_a_directory(tmp_path: Path) -> None:
    (tmp_path / "f").write_text("")
    with pytest.raises(NotADirectoryError):
        Workspace(tmp_path / "f")
