"""Every kind of failed turn gets a clear, non-modal message with the action that fixes it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QSignalSpy, QTest
from pytestqt.qtbot import QtBot

from treechat.services.turns.events import TurnError
from treechat.services.turns.turn_records import ACTIONS
from treechat.ui.shell.error_banner import TITLES, ErrorBanner

EXPECTED = {
    "overflow": ["compact", "retry"],
    "auth": ["settings"],
    "rate_limit": ["retry"],
    "offline": ["retry"],
    "server": ["retry"],
    "bad_request": ["settings"],
    "cancelled": [],
    "busy": [],
    "unavailable": ["settings"],
    "internal": ["retry"],
}


@pytest.mark.parametrize("kind", sorted(ACTIONS))
def test_every_kind_has_words_and_the_right_action(qtbot: QtBot, kind: str) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    error = TurnError(kind, f"What happened ({kind}).", retry=ACTIONS[kind] == "retry",
                      action=ACTIONS[kind])
    banner.show_error(error)
    assert banner.isVisible()
    assert banner.windowModality() == Qt.WindowModality.NonModal
    assert banner.title.text() == TITLES[kind]
    assert banner.message.text().startswith(f"What happened ({kind}).")
    assert banner.action_keys() == EXPECTED[kind]
    assert banner.title.text() in banner.accessibleDescription()


def test_actions_are_reported_and_the_banner_closes(qtbot: QtBot) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    spy = QSignalSpy(banner.actionTriggered)
    banner.show_error(TurnError("offline", "No network.", True, action="retry"))
    QTest.mouseClick(banner.button("retry"), Qt.MouseButton.LeftButton)
    assert spy.count() == 1 and spy.at(0) == ["retry"]
    assert not banner.isVisible()
    banner.show_error(TurnError("server", "Oops.", True, action="retry"))
    QTest.mouseClick(banner.close_button, Qt.MouseButton.LeftButton)
    assert not banner.isVisible() and spy.count() == 1


def test_wait_n_seconds_counts_down(qtbot: QtBot) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    banner.show_error(TurnError("rate_limit", "Slow down.", True, retry_after=1.2,
                                action="wait"))
    button = banner.button("retry")
    assert button is not None and not button.isEnabled()
    assert button.text() == "Retry in 2 s"
    qtbot.waitUntil(button.isEnabled, timeout=5000)
    assert button.text() == "Retry"


def test_a_notice_can_hide_itself(qtbot: QtBot) -> None:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    banner.show_notice("Chat deleted", "“X” was removed.", ("undo",), hide_after_ms=50)
    assert banner.action_keys() == ["undo"] and banner.property("level") == "info"
    qtbot.waitUntil(lambda: not banner.isVisible(), timeout=2000)
