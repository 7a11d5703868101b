"""A new user's first hour, scripted: each test walks what a person did on screen, through the
real services on a DuckDB file and the loopback provider, and checks what they would see."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from tests.support.loopback_server import Reply

from treechat.ui.controllers.history import CONTEXT_TAB

from .conftest import Aio, Desk


SHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def shoot(desk: Desk, name: str) -> None:
    """With TREECHAT_SCREENSHOTS=1 (run on a real display), save the window as
    docs/screenshots/first-hour-<name>.png."""
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        desk.window.grab().save(str(SHOTS / f"first-hour-{name}.png"))


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def open_context_tab(desk: Desk) -> None:
    desk.window.dock.show()
    desk.window.dock_tabs.setCurrentIndex(CONTEXT_TAB)


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]


def test_sending_with_the_context_tab_open_shows_no_error(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    """The Context tab follows the chat while a message is on screen before the store has it:
    the reply arrives and nothing claims it failed."""
    caplog.set_level(logging.INFO)
    open_context_tab(desk)
    desk.provider.queue(Reply(text="first"), Reply(text="second", tokens_per_second=40))

    async def scenario() -> None:
        type_and_send(desk, "Hello there")
        await turn_done(desk, aio, 1)
        type_and_send(desk, "And again")
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    shoot(desk, "context-tab-send")
    assert desk.window.banner.isHidden(), desk.window.banner.message.text()
    assert desk.chat.model.rows[-1].text == "second"
    no_traceback(caplog)
    # the tab shows the stored head's commit, not nothing
    assert desk.controller.history.timeline.commit is not None
