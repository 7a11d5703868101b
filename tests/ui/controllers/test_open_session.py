"""The session on screen: opening a chat shows it with its own unsent text and nothing of
the last one's, a chat shown before reopens from memory and catches up with the store, and
a new chat starts empty on the default model."""

from __future__ import annotations

from collections.abc import Callable

from treechat.core.dag import Change
from treechat.core.model import Node
from treechat.services.turns.sessions import SessionView
from treechat.store.database import Store
from treechat.ui.controllers.open_session import VIEW_CACHE, differs

from ..conftest import MODEL, Aio, Desk, Seed, chat_session


def two_chats(store: Store) -> None:
    chat_session(store, "c1", "Cats", 2_000.0, ["Tell me about cats", "They purr."])
    chat_session(store, "c2", "Dogs", 1_000.0, ["Tell me about dogs", "They bark."])


def test_each_chat_keeps_its_own_unsent_text(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    controller, composer = desk.controller, desk.composer

    async def scenario() -> None:
        await controller.load_session("c1")
        composer.set_text("about whiskers")
        await controller.load_session("c2")
        assert composer.text() == ""
        composer.set_text("about tails")
        controller.new_chat()
        assert composer.text() == "" and controller.current_view is None
        assert composer.current_model() == MODEL  # the default model (Settings)
        await controller.load_session("c1")
        assert composer.text() == "about whiskers"

    aio.run(scenario())
    assert controller.drafts == {"c2": "about tails"}
    assert desk.window.title.text() == "Cats"


def test_a_chat_shown_before_reopens_at_once_and_catches_up_with_the_store(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    controller = desk.controller
    seen: list[SessionView | None] = []
    controller.sessionOpened.connect(seen.append)
    redrawn: list[SessionView] = []
    controller.viewChanged.connect(redrawn.append)

    async def scenario() -> None:
        await controller.load_session("c1")
        await controller.load_session("c2")
        # c1 moves on in the store while it is not shown (another window, a sync)
        extra = Node("c1-2", 0, 3_000.0, "c1", "user", output="And lions?",
                     predecessor="c1-1")
        desk.services.store.call(lambda r: r.apply_change("c1", Change((extra,), "c1-2"),
                                                          3_000.0))
        await controller.load_session("c1")

    aio.run(scenario())
    assert [v.session.id for v in seen if v is not None] == ["c1", "c2", "c1"]
    assert redrawn and redrawn[-1].head == "c1-2"  # the remembered view, then the stored one
    assert [r.key for r in desk.chat.model.rows if r.node_id][-1] == "c1-2"


def test_a_view_differs_from_the_store_when_anything_shown_changed(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(two_chats)
    view = aio.run(desk.services.chat.sessions.view("c1"))
    assert not differs(view, view)
    assert differs(view, SessionView(view.session, view.graph, view.path, view.hidden,
                                     frozenset({"c1-0"})))
    assert VIEW_CACHE >= 2


def chats_with_a_long_one(store: Store) -> None:
    two_chats(store)
    chat_session(store, "long", "Long", 3_000.0,
                 [f"question {i}" if i % 2 == 0 else f"answer {i} about deep sea fish"
                  for i in range(600)])


def test_a_long_chat_shows_its_end_first_and_then_holds_all_of_it(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(chats_with_a_long_one)
    controller, chat = desk.controller, desk.chat
    opened: list[SessionView | None] = []
    controller.sessionOpened.connect(opened.append)
    redrawn: list[SessionView] = []
    controller.viewChanged.connect(redrawn.append)
    aio.run(controller.load_session("c1"))
    aio.run(controller.load_session("long"))
    end = opened[-1]
    assert end is not None and end.is_tail and len(end.path) < 600
    assert "600 messages" in desk.window.subtitle.text()  # the whole chat's, from its end
    assert redrawn and len(redrawn[-1].path) == 600 and not redrawn[-1].is_tail
    assert chat.row_keys()[-1] == "long-599" and chat.at_bottom()
    assert "600 messages" in desk.window.subtitle.text()
    # a message far up the chat (a search hit) is brought in and shown, selected
    assert chat.reveal("long-5", "deep")
    assert chat.model.row_at(chat.list.currentIndex().row()).key == "long-5"
    assert chat.list.viewport().rect().intersects(chat.row_rect("long-5").toRect())
    assert chat.selector.selected_text() == "deep"
    # opened again, it shows at once from memory, whole, at its end
    aio.run(controller.load_session("c2"))
    aio.run(controller.load_session("long"))
    again = opened[-1]
    assert again is not None and not again.is_tail and len(again.path) == 600
    assert chat.row_keys()[-1] == "long-599" and chat.model.has_earlier()
