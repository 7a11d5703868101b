"""Treechat's log file: rotating, under the data dir, with API keys scrubbed before any
record is written."""

from __future__ import annotations

import logging
import logging.handlers
from pathlib import Path

from .providers.keys import install_log_redaction

LOG_FILENAME = "treechat.log"


def configure_logging(data_dir: Path, level: int = logging.INFO) -> Path:
    """Send warnings and Treechat's own records to `<data_dir>/logs/treechat.log`."""
    log_dir = data_dir / "logs"
    log_dir.mkdir(parents=True, exist_ok=True)
    path = log_dir / LOG_FILENAME
    root = logging.getLogger()
    if not any(getattr(h, "baseFilename", None) == str(path) for h in root.handlers):
        handler = logging.handlers.RotatingFileHandler(
            path, maxBytes=2_000_000, backupCount=3, encoding="utf-8", delay=True
        )
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        root.addHandler(handler)
    root.setLevel(logging.WARNING)
    logging.getLogger("treechat").setLevel(level)
    install_log_redaction()
    return path
