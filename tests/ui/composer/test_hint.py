"""The composer's keyboard hint: the longest wording that fits, a shorter one where it does
not, nothing when cramped or switched off; it never asks for room of its own."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.ui.composer.hint import ComposerHint

WORDINGS = ("Enter to send · Shift+Enter for a new line", "Enter to send")


def test_the_hint_says_what_fits_its_room(qtbot: QtBot) -> None:
    hint = ComposerHint(WORDINGS)
    qtbot.addWidget(hint)
    hint.show()
    metrics = hint.fontMetrics()
    hint.resize(metrics.horizontalAdvance(WORDINGS[0]) + 20, 24)
    assert hint.wording() == WORDINGS[0]
    hint.resize(metrics.horizontalAdvance(WORDINGS[1]) + 10, 24)
    assert hint.wording() == WORDINGS[1]
    hint.resize(10, 24)
    assert hint.wording() == ""
    assert hint.minimumSizeHint().width() == 0
    assert hint.accessibleDescription() == WORDINGS[0]


def test_a_hint_switched_off_keeps_quiet_until_switched_on(qtbot: QtBot) -> None:
    hint = ComposerHint(WORDINGS)
    qtbot.addWidget(hint)
    hint.show()
    hint.resize(hint.sizeHint().width() + 20, 24)
    hint.set_shown(False)
    assert hint.wording() == ""
    hint.set_shown(True)
    assert hint.wording() == WORDINGS[0]
