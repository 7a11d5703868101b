"""The keyboard's way to every action of a message: keys on the focused row run its actions
(and only with the right modifiers), and the context menu lists each with its shortcut."""

from __future__ import annotations

from PySide6.QtCore import QEvent, Qt
from PySide6.QtGui import QKeyEvent
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.ui.chat.shortcuts import key_action, menu_actions
from treechat.ui.chat.view import ChatView

from ..session_views import session_view, shown_chat


def press(key: Qt.Key, mods: Qt.KeyboardModifier = Qt.KeyboardModifier.NoModifier
          ) -> QKeyEvent:
    return QKeyEvent(QEvent.Type.KeyPress, key, mods)


def chat_with_versions(qtbot: QtBot) -> ChatView:
    ask = Node("u", 0, 1.0, "s", "user", output="Name a colour")
    first = Node("a1", 1, 2.0, "s", "assistant", output="Blue", predecessor="u")
    second = Node("a2", 2, 3.0, "s", "assistant", output="Green", predecessor="u")
    return shown_chat(qtbot, session_view([ask, first, second]))


def row(chat: ChatView, key: str):
    return chat.model.row_at(chat.model.index_of(key))


def test_plain_keys_run_row_actions_and_alt_arrows_switch_versions(qtbot: QtBot) -> None:
    chat = chat_with_versions(qtbot)
    user, reply = row(chat, "u"), row(chat, "a2")
    delegate = chat.delegate
    assert key_action(press(Qt.Key.Key_E), user, delegate) == "edit"
    assert key_action(press(Qt.Key.Key_B), reply, delegate) == "branch"
    assert key_action(press(Qt.Key.Key_P), reply, delegate) == "pin"
    assert key_action(press(Qt.Key.Key_C, Qt.KeyboardModifier.ControlModifier), reply,
                      delegate) == "copy"
    assert key_action(press(Qt.Key.Key_Left, Qt.KeyboardModifier.AltModifier), reply,
                      delegate) == "prev"
    # the same letters with Ctrl are not the row's (they belong to the window's menus)
    assert key_action(press(Qt.Key.Key_R, Qt.KeyboardModifier.ControlModifier), reply,
                      delegate) is None
    assert key_action(press(Qt.Key.Key_Z), reply, delegate) is None


def test_the_menu_lists_each_action_with_its_shortcut(qtbot: QtBot) -> None:
    chat = chat_with_versions(qtbot)
    user_items = {a: (label, keys) for a, label, keys in menu_actions(row(chat, "u"),
                                                                       chat.delegate)}
    assert user_items["copy"] == ("Copy", "Ctrl+C")
    assert user_items["edit"] == ("Edit…", "E")
    assert "prev" not in user_items  # one version of the question
    reply_items = {a for a, _label, _keys in menu_actions(row(chat, "a2"), chat.delegate)}
    assert {"copy", "branch", "pin", "prev", "next"} <= reply_items
    assert "edit" not in reply_items
