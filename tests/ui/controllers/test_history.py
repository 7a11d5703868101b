"""Drag-to-attach and merge in the window, through the real services, DuckDB file and the
loopback provider: an attached branch reaches the model once and is not expanded again; a
merge of two branches writes a merge node with both as inbound edges and a two-parent commit."""

from __future__ import annotations

import json

from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QWidget
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.ui.controllers.history import HistoryPanels
from treechat.ui.dialogs.merge import MergeDialog
from treechat.ui.graph.edges import extra_sources
from treechat.ui.graph.items import MERGED, node_kind
from treechat.ui.graph.mime import node_mime

from ..conftest import Aio, Desk


def panels(desk: Desk) -> HistoryPanels:
    found = desk.controller.history
    assert isinstance(found, HistoryPanels)
    return found


def drop_on(target: QWidget, mime: object) -> None:
    """What the drag manager delivers when something is dropped on `target`."""
    actions = Qt.DropAction.CopyAction
    enter = QDragEnterEvent(QPoint(10, 10), actions, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)
    assert enter.isAccepted()
    drop = QDropEvent(QPointF(10, 10), actions, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, drop)
    assert drop.isAccepted()


def sent(provider: LoopbackProvider) -> str:
    return json.dumps(provider.requests[-1].body["messages"], ensure_ascii=False)


def type_and_send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def test_drag_from_the_graph_attaches_once_and_a_removed_chip_sends_nothing(
    desk: Desk, aio: Aio
) -> None:
    chat = desk.services.chat
    desk.provider.queue(
        Reply(text="Notes: the lexer keeps KOALA-MARK spans."),
        Reply(text="It splits on ZEBRA-TOKEN boundaries."),
        Reply(text="A shorter answer."),
    )

    async def setup() -> tuple[str, str, str]:
        notes = await chat.sessions.create("Notes")
        await chat.send(notes.id, "What does the lexer keep?")
        main = await chat.sessions.create("Main")
        first = await chat.send(main.id, "How does the tokenizer split input?")
        assert first is not None
        second = await chat.retry(main.id, first.id)  # HEAD moves to the retry
        assert second is not None
        desk.window.dock.show()
        await desk.controller.session_list.reload()
        desk.controller.open_session(main.id)
        await aio.until(lambda: desk.controller.current_session_id == main.id)
        await aio.until(lambda: first.id in panels(desk).graph.view.graph_scene.nodes)
        return notes.id, main.id, first.id

    notes_id, main_id, first_reply = aio.run(setup())
    graph = panels(desk).graph.view
    target = desk.composer.input.viewport()

    async def stage() -> None:
        drop_on(target, node_mime(notes_id, ""))  # a session dragged from the list
        drop_on(target, graph.drag_mime(first_reply))  # a node of another branch
        await aio.until(lambda: len(panels(desk).chips.chips) == 2, what="two chips")

    aio.run(stage())
    chips = panels(desk).chips.chips
    assert [c.staged.source_title for c in chips] == ["Notes", "Main"]
    assert chips[1].staged.source_head == first_reply
    assert chips[1].cost.text().endswith("tokens") and chips[1].staged.tokens > 0
    # removing the Notes chip before sending cancels that attach
    QTest.mouseClick(chips[0].remove_button, Qt.MouseButton.LeftButton)
    assert [c.staged.source_title for c in panels(desk).chips.chips] == ["Main"]

    requests = desk.requests()
    desk.provider.queue(Reply(text="Used it."), Reply(text="Still here."))

    async def send_twice() -> None:
        type_and_send(desk, "Use the attached answer")
        await aio.until(lambda: desk.requests() == requests + 1
                        and not desk.controller.turns.is_running(), what="first turn")
        await desk.controller.tasks.idle()
        assert panels(desk).chips.chips == [] and not panels(desk).chips.isVisible()
        body = sent(desk.provider)
        assert body.count("ZEBRA-TOKEN") == 1
        assert "KOALA-MARK" not in body
        type_and_send(desk, "And now?")
        await aio.until(lambda: desk.requests() == requests + 2
                        and not desk.controller.turns.is_running(), what="second turn")
        await desk.controller.tasks.idle()

    aio.run(send_twice())
    body = sent(desk.provider)
    assert body.count("ZEBRA-TOKEN") == 1  # carried in the context, never expanded again
    assert "KOALA-MARK" not in body
    view = desk.controller.current_view
    pointers = [n for n in view.path if n.is_attach]
    assert len(pointers) == 1 and pointers[0].metadata["source_head"] == first_reply
    scene = graph.graph_scene
    assert node_kind(scene.nodes[pointers[0].id]) == "attach"
    assert (first_reply, "attach") in extra_sources(pointers[0])
    assert main_id == view.session.id


def test_merging_two_branches_from_the_graph(desk: Desk, aio: Aio) -> None:
    chat = desk.services.chat
    desk.provider.queue(Reply(text="Plan A: a KESTREL cache."),
                        Reply(text="Plan B: a HERON queue."))

    async def setup() -> tuple[str, str, str]:
        session = await chat.sessions.create("Plans")
        first = await chat.send(session.id, "Suggest a plan")
        assert first is not None
        second = await chat.retry(session.id, first.id)
        assert second is not None
        desk.window.dock.show()
        await desk.controller.session_list.reload()
        desk.controller.open_session(session.id)
        await aio.until(lambda: desk.controller.current_session_id == session.id)
        await aio.until(lambda: second.id in panels(desk).graph.view.graph_scene.nodes)
        return session.id, first.id, second.id

    sid, first, second = aio.run(setup())
    p = panels(desk)
    p.graph.view.select([first, second])
    assert p.graph.merge_button.isEnabled()
    QTest.mouseClick(p.graph.merge_button, Qt.MouseButton.LeftButton)
    dialog = p._merge_dialog
    assert isinstance(dialog, MergeDialog) and dialog.isVisible()
    dialog.base.setCurrentIndex(dialog.heads.index(second))
    dialog.instruction.setPlainText("Combine both plans into one.")
    requests = desk.requests()
    desk.provider.queue(Reply(text="Merged: a KESTREL cache in front of a HERON queue."))

    async def merge() -> None:
        dialog.accept()
        await aio.until(lambda: desk.requests() == requests + 1, what="the merge request")
        await aio.until(lambda: not desk.controller.turns.is_running(), what="merge turn end")
        await desk.controller.tasks.idle()

    aio.run(merge())
    body = sent(desk.provider)
    assert body.count("KESTREL") == 1 and body.count("HERON") == 1
    assert "Combine both plans into one." in body

    view = desk.controller.current_view
    merge_node = next(n for n in view.path if n.is_merge)
    assert view.graph.get(view.head).predecessor == merge_node.id
    chain = [n.id for n in view.path]
    assert second in chain and first not in chain
    # the merge node has two inbound edges: the base line and the peer
    scene = p.graph.view.graph_scene
    assert extra_sources(merge_node) == [(first, "merge")]
    scene.ensure_items()
    assert scene.items_by_id[merge_node.id].kind == "merge"
    assert scene.items_by_id[first].state & MERGED
    commit = aio.run(desk.services.engine.commit_for(sid, merge_node.id, now=0))
    assert len(commit.parent_ids) == 2
    peer = aio.run(desk.services.engine.commit_for(sid, first, now=0))
    assert commit.parent_ids[1] == peer.id
    notes = desk.services.store.call(lambda r: r.annotations([first]))
    assert [(a.kind, a.value) for a in notes] == [("merged", merge_node.id)]
    assert p.graph.view.selected_nodes() == []
