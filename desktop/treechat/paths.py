"""Where Treechat keeps data and finds its resources, the same way frozen and from source."""

from __future__ import annotations

import os
import sys
from pathlib import Path

APP_NAME = "Treechat"
DATA_DIR_ENV = "TREECHAT_DATA_DIR"


def data_dir(override: str | os.PathLike[str] | None = None) -> Path:
    """The user data dir: `--data-dir`, else $TREECHAT_DATA_DIR, else the platform's own."""
    if override:
        return Path(override).expanduser().resolve()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser().resolve()
    from platformdirs import user_data_dir

    return Path(user_data_dir(APP_NAME, appauthor=False))


def is_frozen() -> bool:
    return bool(getattr(sys, "frozen", False))


def bundle_root() -> Path:
    """The directory the app runs from: PyInstaller's unpack dir when frozen, else the repo."""
    if is_frozen():
        return Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent))
    return Path(__file__).resolve().parents[2]


def resources_dir() -> Path:
    """Icons, themes and model settings shipped with the app."""
    return bundle_root() / "resources"
