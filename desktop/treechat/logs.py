"""Treechat's log file: rotating, under the data dir, with API keys scrubbed before any
record is written."""

from __future__ import annotations

import contextlib
import logging
import logging.handlers
import os
from pathlib import Path

from .paths import require_folder
from .providers.keys import install_log_redaction

LOG_FILENAME = "treechat.log"


def configure_logging(data_dir: Path, level: int = logging.INFO) -> Path:
    """Send warnings and Treechat's own records to `<data_dir>/logs/treechat.log`."""
    log_dir = data_dir / "logs"
    for folder in (data_dir, log_dir):  # this user's only: the log names chats and files
        require_folder(folder)
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if os.name != "nt":
            with contextlib.suppress(OSError):
                os.chmod(folder, 0o700)
    path = log_dir / LOG_FILENAME
    root = logging.getLogger()
    if not any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
        handler = _PrivateRotatingFileHandler(
            path, maxBytes=2_000_000, backupCount=3, encoding="utf-8", delay=True
        )
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("treechat").setLevel(level)
    install_log_redaction()
    return path


class _PrivateRotatingFileHandler(logging.handlers.RotatingFileHandler):
    """Log files created 0600 whatever the umask (each rotation opens a new file)."""

    def _open(self):  # type: ignore[no-untyped-def]
        if os.name != "nt":
            fd = os.open(self.baseFilename, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            os.close(fd)
            with contextlib.suppress(OSError):
                os.chmod(self.baseFilename, 0o600)
        return super()._open()
