"""Where Treechat keeps its data and finds what it ships, from source."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from treechat import paths


def test_the_data_dir_is_the_flag_then_the_environment_then_the_platforms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(paths.DATA_DIR_ENV, str(tmp_path / "from-env"))
    assert paths.data_dir(tmp_path / "flag" / ".." / "flag") == (tmp_path / "flag").resolve()
    assert paths.data_dir() == (tmp_path / "from-env").resolve()
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv(paths.DATA_DIR_ENV, "~/chats")
    assert paths.data_dir() == (tmp_path / "home" / "chats").resolve()
    monkeypatch.delenv(paths.DATA_DIR_ENV)
    platform_dir = paths.data_dir()
    assert platform_dir.name == paths.APP_NAME and platform_dir.is_absolute()


def test_resources_are_found_in_the_repository_when_run_from_source() -> None:
    assert not paths.is_frozen()
    assert paths.app_icon().is_file() and paths.app_icon().suffix == ".svg"
    assert paths.resource("icons", "treechat.svg") == paths.app_icon()
    assert (paths.bundle_root() / "desktop" / "treechat" / "paths.py").is_file()


def test_a_script_runs_under_this_interpreter_unbuffered() -> None:
    script = Path("/x/serve.py")
    assert paths.script_command(script, paths.SERVE_LOCAL_MODEL_FLAG) == [
        sys.executable, "-u", str(script)
    ]
