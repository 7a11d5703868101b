"""How a chat row is painted: a question in its tinted bubble, a failed turn in a card with
the error's faint red, each in the scheme's own colours."""

from __future__ import annotations

from PySide6.QtCore import QPoint
from PySide6.QtGui import QColor
from pytestqt.qtbot import QtBot

from treechat.core.model import Node
from treechat.services.turns.events import TurnError
from treechat.ui.chat.view import ChatView

from ..session_views import session_view, shown_chat


def close(a: QColor, b: QColor, slack: int = 6) -> bool:
    return all(abs(x - y) <= slack for x, y in ((a.red(), b.red()), (a.green(), b.green()),
                                                (a.blue(), b.blue())))


def shown(qtbot: QtBot) -> ChatView:
    ask = Node("u", 0, 1.0, "s", "user", output="A question long enough to make a bubble")
    return shown_chat(qtbot, session_view([ask]))


def pixel_in(chat: ChatView, key: str, inner: str) -> QColor:
    """The colour painted a little inside a row's bubble or card (viewport coordinates)."""
    row = chat.model.row_at(chat.model.index_of(key))
    layout = chat.delegate.layout(row)
    box = layout.bubble if inner == "bubble" else layout.card
    assert box is not None
    origin = chat.list.visualRect(chat.model.index(chat.model.index_of(key))).topLeft()
    spot = QPoint(int(box.left() + 4), int(box.center().y())) + origin
    return chat.list.viewport().grab().toImage().pixelColor(spot)


def test_a_question_is_painted_in_its_bubble(qtbot: QtBot) -> None:
    chat = shown(qtbot)
    qtbot.waitUntil(lambda: chat.row_rect("u").height() > 0, timeout=3000)
    assert close(pixel_in(chat, "u", "bubble"), chat.delegate.colors.user_bubble)


def test_a_failed_turn_is_painted_as_an_error_card(qtbot: QtBot) -> None:
    chat = shown(qtbot)
    chat.show_turn_error(TurnError("server", "The server did not answer.", retry=True,
                                   action="retry"))
    qtbot.waitUntil(lambda: "error" in chat.row_keys(), timeout=3000)
    assert close(pixel_in(chat, "error", "card"), chat.delegate.colors.error_bg)


def test_a_denied_tool_call_says_so_in_its_folded_row(qtbot: QtBot) -> None:
    nodes = [Node("q", 0, 1.0, "s", "user", output="add two and three"),
             Node("a", 1, 2.0, "s", "assistant", output="", predecessor="q"),
             Node("t", 2, 3.0, "s", "tool", name="alpha__add", caller="a",
                  output="The user denied this call: alpha › add did not run.",
                  metadata={"denied": True}),
             Node("r", 3, 4.0, "s", "assistant", output="It was not allowed.", predecessor="a")]
    chat = shown_chat(qtbot, session_view(nodes))
    qtbot.waitUntil(lambda: chat.row_rect("t").height() > 0, timeout=3000)
    row = chat.model.row_at(chat.model.index_of("t"))
    assert row.denied and "denied" in row.accessible_text()
    card = chat.delegate.layout(row).card
    assert card is not None
    origin = chat.list.visualRect(chat.model.index(chat.model.index_of("t"))).topLeft()
    image = chat.list.viewport().grab().toImage()
    status = [image.pixelColor(QPoint(int(x), int(card.top() + 18)) + origin)
              for x in range(int(card.right() - 110), int(card.right() - 34))]
    error = chat.delegate.colors.error
    assert any(close(colour, error, 40) for colour in status)  # "denied", in the error's red
