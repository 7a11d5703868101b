"""Projects in the chat list, on the real store: a project made from a chat's menu with that
chat in it, shown as a folder with its chats under it, folded by a click, renamed, another
chat moved in and one taken out, and deleted with its chats kept; picked chats dragged onto it
(or moved from one's menu) and out again, the move undone from the banner; all of it in the
store."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QMenu, QWidget

from treechat.store.database import Store
from treechat.ui.controllers.projects import ProjectsController
from treechat.ui.graph.mime import read_node_mime
from treechat.ui.projects.project_dialog import ProjectDialog
from treechat.ui.sessions.chat_drop import add_chats, read_chats
from treechat.ui.sessions.roles import KIND_ROLE, PROJECT_ID_ROLE, SESSION_ID_ROLE

from ..conftest import Aio, Desk, Seed, chat_session
from .knowledge_desk import shoot


def seed(store: Store) -> None:
    chat_session(store, "s1", "Kitchen tiles", 1_700_000_300.0, ["Which grout?", "Epoxy."])
    chat_session(store, "s2", "Oven choice", 1_700_000_200.0, ["Gas or induction?", "Induction."])
    chat_session(store, "s3", "Weekend hike", 1_700_000_100.0, ["Where to?", "The ridge."])


def rows(desk: Desk) -> list[tuple[str, str]]:
    """(kind, project id or session id) of each row of the list, in order."""
    model = desk.window.sessions.model
    out = []
    for r in range(model.rowCount()):
        index = model.index(r)
        kind = str(index.data(KIND_ROLE))
        ident = index.data(PROJECT_ID_ROLE) if kind == "project" else index.data(SESSION_ID_ROLE)
        out.append((kind, str(ident or index.data())))
    return out


def action(menu: QMenu, text: str) -> QMenu | None:
    for a in menu.actions():
        if a.text() == text:
            sub = a.menu()
            if isinstance(sub, QMenu):
                return sub
            a.trigger()
            return None
    raise AssertionError(f"no {text!r} in {[a.text() for a in menu.actions()]}")


def test_a_project_in_the_chat_list_from_making_to_deleting(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(seed)
    projects = desk.controller.projects
    assert isinstance(projects, ProjectsController)
    listed = desk.window.sessions

    async def scenario() -> None:
        menu = QMenu()
        listed.menuRequested.emit("s1", menu)
        into = action(menu, "Move to project")
        assert into is not None
        action(into, "New project…")
        dialog = projects.dialog
        assert isinstance(dialog, ProjectDialog) and not dialog.save_button.isEnabled()
        dialog.name.setText("Kitchen")
        dialog.instructions.setPlainText("We are renovating a small kitchen.")
        dialog.save_button.click()
        await aio.until(lambda: ("project", _pid(desk)) in rows(desk), what="the project")
        pid = _pid(desk)
        assert rows(desk)[:2] == [("project", pid), ("session", "s1")]
        found = await desk.services.chat.tools.projects.project_of("s1")
        assert found is not None and found.instructions == "We are renovating a small kitchen."

        menu = QMenu()  # another chat moves in from its menu
        listed.menuRequested.emit("s2", menu)
        into = action(menu, "Move to project")
        assert into is not None
        action(into, "Kitchen")
        await aio.until(lambda: rows(desk)[:3] == [("project", pid), ("session", "s1"),
                                                   ("session", "s2")], what="moved in")
        await shoot(desk, "projects")
        header = listed.model.project_index(pid)
        listed.view.clicked.emit(header)  # folds it
        assert ("session", "s1") not in rows(desk)
        assert "2 chats" in str(header.data(Qt.ItemDataRole.ToolTipRole))
        listed.view.clicked.emit(listed.model.project_index(pid))
        assert ("session", "s1") in rows(desk)

        menu = QMenu()
        listed.projectMenuRequested.emit(pid, menu)
        action(menu, "Edit project…")
        edit = projects.dialog
        assert isinstance(edit, ProjectDialog) and edit.name.text() == "Kitchen"
        edit.name.setText("Kitchen 2026")
        edit.save_button.click()
        await aio.until(lambda: listed.model.project_index(pid).data() == "Kitchen 2026",
                        what="renamed")

        menu = QMenu()
        listed.menuRequested.emit("s2", menu)
        action(menu, "Take out of its project")
        await aio.until(lambda: rows(desk)[:2] == [("project", pid), ("session", "s1")]
                        and ("session", "s2") in rows(desk)[3:], what="taken out")

        menu = QMenu()
        listed.projectMenuRequested.emit(pid, menu)
        action(menu, "Delete project (its chats are kept)")
        await aio.until(lambda: all(kind != "project" for kind, _ in rows(desk)),
                        what="deleted")
        assert {i for k, i in rows(desk) if k == "session"} == {"s1", "s2", "s3"}
        assert (await desk.services.chat.tools.projects.all()).projects == ()

    aio.run(scenario())


def _pid(desk: Desk) -> str:
    found = desk.window.sessions.model.projects()
    return found[0][0] if found else ""


def test_picked_chats_dragged_onto_a_project_move_in_and_the_banner_undoes_it(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(seed)
    listed = desk.window.sessions
    banner = desk.window.banner
    service = desk.services.chat.tools.projects

    async def scenario() -> None:
        made = await service.create("Kitchen")
        await desk.controller.projects.reload()
        view, model = listed.view, listed.model
        # s1 is open; s2 is picked beside it (Ctrl+click) and the drag starts on s2
        view.setCurrentIndex(model.index_of("s1"))
        QTest.mouseClick(view.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.ControlModifier,
                         view.visualRect(model.index_of("s2")).center())
        assert listed.selected_session_ids() == ["s1", "s2"]
        data = desk.controller.history.session_drag.drag_data(model.index_of("s2"))
        assert data is not None and read_chats(data) == ["s2", "s1"]
        assert read_node_mime(data) == ("s2", None)  # onto the composer: s2 is attached
        folder = view.visualRect(model.project_index(made.id)).center()
        drag_to(view.viewport(), data, folder)
        assert desk.window.statusBar().currentMessage() == (
            "Release to move 2 chats into “Kitchen”")
        await shoot(desk, "projects-dragging")
        drop_on_list(view.viewport(), data, folder)
        assert desk.window.statusBar().currentMessage() == ""
        await aio.until(lambda: rows(desk)[:3] == [("project", made.id), ("session", "s1"),
                                                   ("session", "s2")], what="moved in")
        assert banner.title.text() == "Moved 2 chats to “Kitchen”"
        assert banner.action_keys() == ["undo_move"]
        assert {s: p for s, p in (await service.all()).member_of.items()} == {
            "s1": made.id, "s2": made.id}
        await shoot(desk, "projects-drop")

        banner.actionTriggered.emit("undo_move")
        await aio.until(lambda: not in_a_project(desk), what="put back")
        assert not (await service.all()).member_of

        # the keyboard's way: the menu of one of the picked chats moves them all
        picks = view.selectionModel()
        picks.select(model.index_of("s2"), picks.SelectionFlag.ClearAndSelect)
        picks.select(model.index_of("s3"), picks.SelectionFlag.Select)
        assert listed.selected_session_ids() == ["s2", "s3"]
        menu = QMenu()
        listed.menuRequested.emit("s3", menu)
        into = action(menu, "Move to project (2 chats)")
        assert into is not None
        action(into, "Kitchen")
        await aio.until(lambda: {i for k, i in rows(desk)[1:3]} == {"s2", "s3"},
                        what="moved from the menu")
        assert banner.title.text() == "Moved 2 chats to “Kitchen”"

        # and out again: dropped among the chats outside every project
        outside = view.visualRect(model.index_of("s1")).center()
        drop_on_list(view.viewport(), add_chats(QMimeData(), ["s3"]), outside)
        await aio.until(lambda: not model.project_of("s3"), what="taken out")
        assert rows(desk)[:2] == [("project", made.id), ("session", "s2")]
        assert rows(desk)[2][0] == "header"  # s3 is back among the days
        assert banner.title.text() == "Took “Weekend hike” out of its project"

    aio.run(scenario())


def in_a_project(desk: Desk) -> bool:
    """True while some chat still sits in a project."""
    model = desk.window.sessions.model
    return any(model.project_of(s) for s in ("s1", "s2", "s3"))


ACTIONS = Qt.DropAction.CopyAction | Qt.DropAction.MoveAction


def drag_to(port: QWidget, mime: QMimeData, at: QPoint) -> None:
    """What the drag manager delivers when chats are dragged over the list to `at`."""
    for kind in (QDragEnterEvent, QDragMoveEvent):
        event = kind(at, ACTIONS, mime, Qt.MouseButton.LeftButton,
                     Qt.KeyboardModifier.NoModifier)
        QApplication.sendEvent(port, event)
        assert event.isAccepted()


def drop_on_list(port: QWidget, mime: QMimeData, at: QPoint) -> None:
    """What the drag manager delivers when chats are dragged to `at` and released."""
    drag_to(port, mime, at)
    actions = ACTIONS
    drop = QDropEvent(QPointF(at), actions, mime, Qt.MouseButton.LeftButton,
                      Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(port, drop)
    assert drop.isAccepted() and drop.dropAction() == Qt.DropAction.MoveAction


LONG = "Renovation of the kitchen, the pantry and the small bathroom upstairs (2026 budget)"


def many(store: Store) -> None:
    seed(store)
    for n in range(4, 30):
        chat_session(store, f"s{n}", f"Question {n} about the {LONG.lower()}",
                     1_700_000_000.0 - n * 100, ["?", "!"])


def test_many_projects_with_long_names_read_in_a_small_window(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    desk = desk_with(many)
    listed = desk.window.sessions
    service = desk.services.chat.tools.projects

    async def scenario() -> None:
        made = [await service.create(f"{n:02} {LONG}") for n in range(12)]
        for n, p in enumerate(made[:6]):
            await service.move(f"s{n + 4}", p.id)
            await service.move(f"s{n + 10}", p.id)
        await desk.controller.projects.reload()
        desk.window.resize(desk.window.minimumSizeHint())
        await aio.settle(0.1)
        view = listed.view
        first = listed.model.project_index(made[0].id)
        # the name is cut to the row with an ellipsis and the count stays in view; the
        # whole name is in the tooltip and what a screen reader hears
        assert view.horizontalScrollBar().isHidden() or not view.horizontalScrollBar().maximum()
        assert LONG in str(first.data(Qt.ItemDataRole.ToolTipRole))
        assert str(first.data(Qt.ItemDataRole.AccessibleTextRole)).endswith(", 2 chats")
        row = view.visualRect(first)
        assert row.right() <= view.viewport().width()
        shot = view.viewport().grab(row).toImage()
        ink = [x for x in range(shot.width()) for y in range(shot.height())
               if shot.pixelColor(x, y).lightness() < 128]
        assert ink and max(ink) > row.width() - 40  # the count, drawn at the right edge
        await shoot(desk, "projects-many")

    aio.run(scenario())


def test_the_window_s_menus_offer_knowledge_and_a_new_project(
    desk_with: Callable[[Seed | None], Desk], aio: Aio
) -> None:
    """Knowledge and projects are found without right-clicking: Chat → Knowledge for this
    chat… (for the chat on screen, off without one) and File → New project…."""
    desk = desk_with(seed)
    projects = desk.controller.projects
    menus = {a.menu().title().replace("&", ""): a.menu() for a in desk.window.menuBar().actions()
             if isinstance(a.menu(), QMenu)}
    knowledge = next(a for a in menus["Chat"].actions() if a.text() == "Knowledge for this chat…")
    new_project = next(a for a in menus["File"].actions() if a.text() == "New project…")
    file_items = [a.text() for a in menus["File"].actions()]
    # beside "New chat", never after "Quit"
    assert file_items[file_items.index("New chat") + 1] == "New project…"
    assert file_items[-1] == "Quit"

    async def scenario() -> None:
        desk.controller.new_chat()
        assert not knowledge.isEnabled()
        await desk.controller.load_session("s2")
        assert knowledge.isEnabled()
        knowledge.trigger()
        (panel,) = projects.knowledge.panels.values()
        assert panel.isVisible() and "Oven choice" in panel.windowTitle()
        panel.close()
        new_project.trigger()
        assert isinstance(projects.dialog, ProjectDialog) and projects.dialog.isVisible()
        projects.dialog.close()

    aio.run(scenario())
