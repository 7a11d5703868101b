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
