"""What the projects and knowledge tests share: screenshots for the docs on request."""

from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtWidgets import QWidget

from ..conftest import Desk

SHOTS = Path(__file__).resolve().parents[3] / "build" / "screenshots"


async def shoot(desk: Desk, name: str, widget: QWidget | None = None) -> None:
    """With TREECHAT_SCREENSHOTS=1, save `widget` (the window when not given) as
    build/screenshots/knowledge-<name>-light.png and -dark.png. The scheme is let settle by
    awaiting: handling Qt's events inside a running task would lose another task's step."""
    if os.environ.get("TREECHAT_SCREENSHOTS") != "1":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    for mode in ("light", "dark"):
        desk.theme.set_mode(mode)
        await desk.aio.settle(0.2)
        (widget or desk.window).grab().save(str(SHOTS / f"knowledge-{name}-{mode}.png"))
    desk.theme.set_mode("light")
