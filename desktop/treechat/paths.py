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


class NotAFolderError(OSError):
    """The data folder (or a folder in it) is a file: one line for the user."""


def require_folder(folder: Path) -> None:
    """NotAFolderError when `folder` exists and is not a folder (it may not exist yet)."""
    if folder.exists() and not folder.is_dir():
        raise NotAFolderError(f"the data folder {folder} is a file, not a folder; give "
                              "--data-dir a folder (it holds the store, the log, the backups)")


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


def resource(*parts: str) -> Path:
    """One file under resources/, e.g. `resource("icons", "treechat.svg")`."""
    return resources_dir().joinpath(*parts)


def app_icon() -> Path:
    """The application icon (SVG; the installers carry PNG renders of it)."""
    return resource("icons", "treechat.svg")


# A frozen app has no interpreter to hand a script to, so its own executable is started again
# with this flag, which the frozen entry point dispatches before anything else is imported.
SERVE_LOCAL_MODEL_FLAG = "--serve-local-model"


def script_command(script: Path, frozen_flag: str) -> list[str]:
    """The command that runs one of Treechat's standalone scripts as a child process.

    From source: this interpreter running the file, unbuffered. Frozen: the app's executable
    with `frozen_flag`; the script's module is bundled and the flag selects it.
    """
    if is_frozen():
        return [sys.executable, frozen_flag]
    return [sys.executable, "-u", str(script)]
