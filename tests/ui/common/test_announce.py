"""What a screen reader is told when a reply ends: who wrote it, whether it was stopped, and
its start (a long reply is cut at a word, the rest is read from the list)."""

from __future__ import annotations

from PySide6.QtWidgets import QLabel
from pytestqt.qtbot import QtBot

from treechat.ui.common.announce import announce, reply_announcement


def test_a_finished_reply_is_announced_with_its_model() -> None:
    assert reply_announcement("Loopback", "Hello.") == "Reply from Loopback finished. Hello."
    assert reply_announcement("", "Hi") == "Reply from The model finished. Hi"


def test_a_stopped_reply_says_so_with_or_without_text() -> None:
    assert reply_announcement("o3", "Half", stopped=True) == "Reply from o3 stopped. Half"
    assert reply_announcement("o3", "  ", stopped=True) == "Reply from o3 stopped."


def test_announcing_without_assistive_technology_is_harmless(qtbot: QtBot) -> None:
    label = QLabel()
    qtbot.addWidget(label)
    announce(label, "word " * 500)  # no screen reader on the offscreen platform: nothing sent
    announce(label, "")
