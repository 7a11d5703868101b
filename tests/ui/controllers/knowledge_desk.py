"""What the projects and knowledge tests share: screenshots for the docs on request."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

from ..conftest import Desk

SHOTS = Path(__file__).resolve().parents[3] / "build" / "screenshots"


def shoot(desk: Desk, name: str, widget: QWidget | None = None) -> None:
    """With TREECHAT_SCREENSHOTS=1 (on a real display), save `widget` (the window when not
    given) as build/screenshots/knowledge-<name>-light.png and -dark.png."""
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        for _ in range(8):
            QApplication.processEvents()
        (widget or desk.window).grab().save(str(SHOTS / f"knowledge-{name}-{mode}.png"))
    desk.theme.set_mode("light")
