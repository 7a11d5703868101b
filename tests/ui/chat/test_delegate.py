"""The chat delegate as the list sees it: heights (estimated, then exact, deferred ones
applied in one go), the buttons under the pointer and whether they answer while a turn
runs, the copied mark on the clock it is given, painting, and the inline editor's height."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from PySide6.QtCore import QPointF, QRect
from PySide6.QtGui import QColor, QImage, QPainter
from PySide6.QtWidgets import QApplication, QStyleOptionViewItem

from treechat.core import dag
from treechat.core.model import Node, Session
from treechat.services.turns.sessions import SessionView
from treechat.ui.chat.delegate import ChatDelegate
from treechat.ui.chat.model import ChatRow, RowKind
from treechat.ui.chat.view import ChatView

LONG = "\n\n".join(f"Paragraph {i}: " + "words that wrap across the column " * 6
                   for i in range(12))


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def session_view(texts: list[str]) -> SessionView:
    nodes = []
    prev = None
    for i, text in enumerate(texts):
        node = Node(f"n{i}", i + 1, 1_700_000_000.0 + i, "s", "user" if i % 2 == 0 else
                    "assistant", output=text, predecessor=prev)
        nodes.append(node)
        prev = node.id
    graph = dag.Graph(nodes)
    session = Session("s", "Test", prev, "openai/m", 1_700_000_000.0)
    return SessionView(session, graph, dag.active_path(graph, prev), frozenset(), frozenset())


@pytest.fixture
def clock() -> FakeTime:
    return FakeTime()


@pytest.fixture
def chat(qapp: QApplication, clock: FakeTime) -> Iterator[ChatView]:
    view = ChatView(monotonic=clock)
    view.resize(900, 700)
    view.show()
    view.set_view(session_view(["Hello there", LONG, "A short question?"]))
    QApplication.processEvents()
    yield view
    view.close()
    view.deleteLater()
    QApplication.processEvents()


def rows(chat: ChatView) -> list[ChatRow]:
    return chat.model.rows


def row_of(chat: ChatView, kind: RowKind, n: int = 0) -> ChatRow:
    return [r for r in rows(chat) if r.kind == kind][n]


def test_a_row_not_measured_gets_an_estimate_then_its_exact_height(chat: ChatView) -> None:
    delegate = chat.delegate
    reply = row_of(chat, RowKind.ASSISTANT)
    delegate.width = 640  # a new width: nothing measured at it yet
    assert not delegate.is_measured(reply)
    estimate = delegate.row_height(reply)
    assert estimate > 100  # twelve wrapped paragraphs
    height, _changed = delegate.measure(reply)
    assert delegate.is_measured(reply)
    assert height == delegate.row_height(reply) == int(delegate.layout(reply).height + 0.999)


def test_deferred_heights_wait_for_apply_pending(chat: ChatView) -> None:
    delegate = chat.delegate
    delegate.width = 500
    reply = row_of(chat, RowKind.ASSISTANT)
    estimate = delegate.row_height(reply)
    exact, _ = delegate.measure(reply, cache=False, defer=True)
    assert delegate.is_known(reply) and not delegate.is_measured(reply)
    assert delegate.row_height(reply) == estimate  # the list still lays out with the guess
    assert delegate.has_pending()
    assert delegate.apply_pending() == (exact != estimate)
    assert delegate.row_height(reply) == exact and not delegate.has_pending()


def test_the_copy_button_is_under_its_rect_and_locked_actions_follow_a_running_turn(
    chat: ChatView,
) -> None:
    delegate = chat.delegate
    user = row_of(chat, RowKind.USER, 1)  # the last user message: it can be retried
    copy = delegate.button(user, "copy")
    assert copy is not None
    assert delegate.hit(user, copy.rect.center()) == "copy"
    assert delegate.hit(user, QPointF(1, 1)) == ""
    assert delegate.action_enabled(user, "edit") and delegate.action_enabled(user, "retry")
    delegate.busy = True
    assert not delegate.action_enabled(user, "edit")
    assert not delegate.action_enabled(user, "retry")
    assert delegate.action_enabled(user, "copy")  # copying never waits for a turn
    edit = delegate.button(user, "edit")
    assert edit is not None
    tip = delegate.interaction.tooltip(delegate.layout(user), "edit")
    assert tip.endswith("unavailable while a reply is running")


def test_the_copied_mark_lasts_on_the_clock_it_was_given(chat: ChatView,
                                                         clock: FakeTime) -> None:
    delegate = chat.delegate
    delegate.mark_copied("n0", "copy")
    assert delegate.interaction.is_copied("n0", "copy")
    clock.now += 1.0
    assert delegate.interaction.is_copied("n0", "copy")
    clock.now += 1.0
    assert not delegate.interaction.is_copied("n0", "copy")


def test_a_user_row_paints_its_bubble_and_hovered_buttons(chat: ChatView) -> None:
    delegate: ChatDelegate = chat.delegate
    user = row_of(chat, RowKind.USER)
    layout = delegate.layout(user)
    assert layout.bubble is not None
    index = chat.model.index(chat.model.index_of(user.key))
    rect = chat.list.visualRect(index)

    def paint() -> QImage:
        image = QImage(rect.width(), rect.height(), QImage.Format.Format_ARGB32)
        image.fill(QColor(0, 0, 0, 0))
        painter = QPainter(image)
        opt = QStyleOptionViewItem()
        opt.rect = QRect(0, 0, rect.width(), rect.height())
        delegate.paint(painter, opt, index)
        painter.end()
        return image

    plain = paint()
    centre = layout.bubble.center().toPoint()
    assert plain.pixelColor(centre).alpha() > 0  # the bubble is filled
    copy = delegate.button(user, "copy")
    assert copy is not None
    icon = copy.rect.center().toPoint()
    assert plain.pixelColor(icon).alpha() == 0  # hover-only buttons hide
    delegate.set_hover(user.key, "copy")
    hovered = paint()
    area = [hovered.pixelColor(icon.x() + dx, icon.y() + dy).alpha()
            for dx in range(-7, 8) for dy in range(-7, 8)]
    assert max(area) > 0  # the icon (an SVG file) and its hover plate are drawn


def test_an_inline_editor_takes_its_own_height_until_it_closes(chat: ChatView) -> None:
    delegate = chat.delegate
    user = row_of(chat, RowKind.USER)
    delegate.measure(user)
    before = delegate.row_height(user)
    editor = chat.start_edit(user.key)
    assert editor is not None
    assert delegate.editing_keys() == (user.key,)
    # the row is as tall as the editor wants (it re-measures as its style settles)
    assert abs(delegate.row_height(user) - (editor.wanted_height() + 16)) <= 2
    assert delegate.row_height(user) > before
    editor.cancelled.emit()
    QApplication.processEvents()
    assert delegate.editing_keys() == ()
    assert delegate.row_height(user) == before
