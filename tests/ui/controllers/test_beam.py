"""Several models at once in the real window, on three loopback servers through litellm: the
picker's "Several…" ticks three models, one message streams a column each in the compare
view, a column is continued from, and a chosen model fuses them into a merge node."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QStackedWidget
from tests.support.beam_servers import LABELS, MODELS, three_servers
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.app import connect_services, create_window
from treechat.core.dag import version_of
from treechat.core.money import money
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.beam import DEFAULT_FUSE_INSTRUCTION
from treechat.ui.chat.rows import RowKind
from treechat.ui.controllers.beam import BeamController

from ..conftest import Aio, Desk, close_desk
from .controls_desk import controls


@pytest.fixture
def servers() -> Iterator[list[LoopbackProvider]]:
    with three_servers() as started:
        yield started


@pytest.fixture
def desk3(qapp: QApplication, aio: Aio, tmp_path: Path,
          servers: list[LoopbackProvider]) -> Iterator[Desk]:
    choices = tuple(ModelChoice(m, label, "openai", api_base=s.openai_base)
                    for m, label, s in zip(MODELS, LABELS, servers, strict=True))
    yield from beam_desk(qapp, aio, tmp_path, servers, choices)


# a priced model, one with no known price and one on this computer, each on its own
# server; the picker starts on a fourth that the message does not go to
MIXED = ("openai/gpt-4o-mini", "openai/beam-unpriced", "openai/beam-local")
PICKED = "openai/gpt-4o"


@pytest.fixture
def desk_mixed(qapp: QApplication, aio: Aio, tmp_path: Path,
               servers: list[LoopbackProvider]) -> Iterator[Desk]:
    choices = (
        ModelChoice(MIXED[0], "Mini", "openai", api_base=servers[0].openai_base),
        ModelChoice(MIXED[1], "Odd", "openai", api_base=servers[1].openai_base),
        ModelChoice(MIXED[2], "Home", "openai", api_base=servers[2].openai_base, local=True),
        ModelChoice(PICKED, "Omni", "openai", api_base=servers[0].openai_base),
    )
    yield from beam_desk(qapp, aio, tmp_path, servers, choices, default=PICKED)


def beam_desk(qapp: QApplication, aio: Aio, tmp_path: Path, servers: list[LoopbackProvider],
              choices: tuple[ModelChoice, ...], default: str = MODELS[0]) -> Iterator[Desk]:
    from treechat.providers import llm

    aio.run(llm.ensure_loaded(), timeout=300)
    data_dir = tmp_path / "data"
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              extra_models=choices, keys=KeyStore(environ={}))
    services.models.default_model = default
    window, prefs, theme = create_window(qapp, data_dir)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    window.resize(1366, 740)
    aio.run(controller.start())
    desk = Desk(window, controller, services, servers[0], prefs, theme, aio, data_dir)
    try:
        yield desk
    finally:
        close_desk(desk)


def beam_of(desk: Desk) -> BeamController:
    beam = desk.controller.beam
    assert beam is not None
    return beam


def stack_of(desk: Desk) -> QStackedWidget:
    parent = desk.chat.parentWidget()
    assert isinstance(parent, QStackedWidget)
    return parent


def tick_three(desk: Desk, aio: Aio) -> None:
    picker = desk.composer.picker
    picker.showPopup()
    QTest.mouseClick(picker.popup.several_button, Qt.MouseButton.LeftButton)
    popup = desk.composer.several.popup
    assert popup.isVisible() and not picker.popup.isVisible()
    for i in range(popup.list.count()):
        popup.list.item(i).setCheckState(Qt.CheckState.Checked)
    assert popup.use_button.text() == "Ask these 3"
    QTest.mouseClick(popup.use_button, Qt.MouseButton.LeftButton)


def test_one_message_to_three_models_streams_a_column_each(
    desk3: Desk, aio: Aio, servers: list[LoopbackProvider]
) -> None:
    desk = desk3
    beam = beam_of(desk)
    gates = [threading.Event() for _ in servers]
    said = ("Hardwood is best.\n\nMAPLE: hard and pale.", "Hardwood is best.\n\nBIRCH is cheap.",
            "CEDAR resists rot outdoors.")
    for server, gate, text in zip(servers, gates, said, strict=True):
        server.queue(Reply(text=text, hold=gate))

    async def scenario() -> None:
        await aio.until(lambda: MODELS[2] in desk.composer.model_ids(), what="the models")
        tick_three(desk, aio)
        assert desk.composer.several.text() == "3 models"
        assert desk.composer.several.chosen() == list(MODELS)
        desk.composer.set_text("Name a tree")
        desk.composer.submit()
        await aio.until(lambda: beam.view is not None
                        and stack_of(desk).currentWidget() is beam.view, what="the compare view")
        view = beam.view
        assert view is not None
        switches: list[int] = []  # the chat redraws as the replies end: the page stays
        stack_of(desk).currentChanged.connect(switches.append)
        assert [c.title.text() for c in view.columns] == list(LABELS)
        assert not view.fuse_button.isEnabled()  # not while they stream
        assert view.fuse_model.count() >= 3  # the models it may be fused with are named
        for server in servers:  # every request is out before any is answered
            await aio.until(lambda s=server: len(s.requests) == 1, what="three requests")
        for gate in gates:
            gate.set()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the replies")
        await aio.until(lambda: all(c.column.key for c in view.columns), what="filled")
        texts = [c.body.toPlainText() for c in view.columns]
        assert texts == [t.replace("\n\n", "\n") for t in said]
        assert switches == [] and stack_of(desk).currentWidget() is view
        assert all("$" in c.facts.text() and "first token" in c.facts.text()
                   for c in view.columns)
        # each column says which version its reply is, as the chat's `< N/M >` switch does
        stored = await desk.services.chat.sessions.view(desk.controller.current_session_id)
        versions = [version_of(stored.graph, c.column.key) for c in view.columns]
        assert sorted(versions) == [(1, 3), (2, 3), (3, 3)]
        assert all(c.facts.text().endswith(f" · version {n}/{m}")
                   for c, (n, m) in zip(view.columns, versions, strict=True))
        assert view.fuse_button.isEnabled()
        # what only one reply says is tinted, and the toggle takes it away
        assert [c.marked() for c in view.columns] == [[False, True], [False, True], [True]]
        view.differences.setChecked(False)
        assert not any(any(c.marked()) for c in view.columns)
        shown = desk.controller.current_view
        assert shown is not None and shown.graph.get(shown.head or "").text == said[0]
        QTest.mouseClick(view.back, Qt.MouseButton.LeftButton)
        assert stack_of(desk).currentWidget() is desk.chat
        total = await desk.services.chat.spending.chat_total(shown.session.id)
        assert total.requests == 3

    aio.run(scenario(), timeout=120)


def test_compare_continue_from_a_column_and_fuse(
    desk3: Desk, aio: Aio, servers: list[LoopbackProvider]
) -> None:
    desk = desk3
    beam = beam_of(desk)
    for server, word in zip(servers, ("MAPLE", "BIRCH", "CEDAR"), strict=True):
        server.queue(Reply(text=f"Use {word}."))

    async def scenario() -> None:
        await aio.until(lambda: MODELS[2] in desk.composer.model_ids(), what="the models")
        desk.composer.several.set_chosen(list(MODELS))
        desk.composer.set_text("Which wood?")
        desk.composer.submit()
        await aio.until(lambda: beam.view is not None and all(
            c.column.key for c in beam.view.columns), what="three replies")
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the turn")
        view = beam.view
        assert view is not None
        QTest.mouseClick(view.back, Qt.MouseButton.LeftButton)

        # from the chat: the window's action opens the compare view on the last message
        QTest.keyClick(desk.window, Qt.Key.Key_B,
                       Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier)
        await aio.until(lambda: stack_of(desk).currentWidget() is view, what="compare")
        second = view.columns[1]
        QTest.mouseClick(second.pick, Qt.MouseButton.LeftButton)
        await aio.until(lambda: stack_of(desk).currentWidget() is desk.chat, what="back")
        await aio.until(lambda: desk.controller.current_view is not None and (
            desk.controller.current_view.graph.get(
                desk.controller.current_view.head or "").text == "Use BIRCH."),
            what="HEAD on the second reply")

        # a reply's menu offers the same, for the message it answers
        shown = desk.controller.current_view
        assert shown is not None
        menu = desk.chat.context_menu(shown.head or "")
        (offer,) = [a for a in menu.actions() if a.text().startswith("Compare the")]
        assert offer.text() == "Compare the 3 replies side by side"
        offer.trigger()
        menu.close()
        await aio.until(lambda: stack_of(desk).currentWidget() is view, what="compare")
        assert [c.body.toPlainText() for c in view.columns] == [
            "Use MAPLE.", "Use BIRCH.", "Use CEDAR."]  # in the order the models were asked
        assert view.instruction.toPlainText() == DEFAULT_FUSE_INSTRUCTION
        view.edit_instruction.setChecked(True)
        view.instruction.setPlainText("Pick one wood, name the others.")
        view.fuse_model.setCurrentIndex(view.fuse_model.findData(MODELS[2]))
        resume = threading.Event()
        servers[2].queue(Reply(text="Fused: CEDAR; MAPLE and BIRCH disagreed.", pause_after=1,
                               resume=resume))
        QTest.mouseClick(view.fuse_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: stack_of(desk).currentWidget() is desk.chat, what="chat")
        # while it streams, the fused reply has its own header: it is not the continuation
        # of the reply on screen
        await aio.until(lambda: desk.chat.model.stream_text() != "", what="the fuse streams")
        rows = desk.chat.model.rows
        above, streaming = rows[-2], rows[-1]
        assert streaming.kind == RowKind.STREAM and streaming.starts_turn
        assert streaming.model == f"{LABELS[2]} · fusing 3 replies"
        assert above.ends_turn
        resume.set()
        fused = "Fused: CEDAR; MAPLE and BIRCH disagreed."
        await aio.until(lambda: desk.controller.current_view is not None and (
            desk.controller.current_view.graph.get(
                desk.controller.current_view.head or "").text == fused), what="the fuse")
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the turn's end")
        shown = await desk.services.chat.sessions.view(
            desk.controller.current_view.session.id)  # type: ignore[union-attr]
        head = shown.graph.get(shown.head or "")
        assert head.text == fused
        merge = shown.graph.get(head.predecessor or "")
        assert merge.is_merge and merge.text.startswith("Pick one wood, name the others.")
        assert len(merge.metadata["peers"]) == 2  # the base line and two peers: three parents
        wire = str(servers[2].requests[-1].body["messages"])
        assert all(w in wire for w in ("MAPLE", "BIRCH", "CEDAR"))

    aio.run(scenario(), timeout=120)


def test_a_set_of_models_is_saved_under_a_name(desk3: Desk, aio: Aio) -> None:
    desk = desk3
    button = desk.composer.several

    async def scenario() -> None:
        await aio.until(lambda: MODELS[2] in desk.composer.model_ids(), what="the models")
        button.open_popup()
        popup = button.popup
        popup.tick(MODELS[:2])
        assert not popup.save_button.isEnabled()  # a name first
        popup.name.setText("my three")
        popup.tick(MODELS)
        QTest.mouseClick(popup.save_button, Qt.MouseButton.LeftButton)
        await aio.until(lambda: popup.saved.count() == 2, what="the saved set")
        assert await beam_of(desk).beam.model_sets() == {"my three": MODELS}
        popup.tick([])
        popup.saved.setCurrentIndex(1)
        popup.saved.activated.emit(1)
        assert popup.ticked() == list(MODELS)
        QTest.mouseClick(popup.one_button, Qt.MouseButton.LeftButton)
        assert button.chosen() == [] and button.isHidden()

    aio.run(scenario(), timeout=60)


def test_each_column_and_the_next_send_price_every_model_asked(
    desk_mixed: Desk, aio: Aio, servers: list[LoopbackProvider]
) -> None:
    """Three models asked (priced, unpriced, on this computer): the unpriced column says so
    as soon as its reply ends, the estimate by Send prices all three, and the header names
    a model the message went to."""
    desk = desk_mixed
    beam = beam_of(desk)
    c = controls(desk)
    gates = [threading.Event() for _ in servers]
    for server, gate, word in zip(servers, gates, ("MAPLE", "BIRCH", "CEDAR"), strict=True):
        server.queue(Reply(text=f"Use {word}.", hold=gate))

    async def scenario() -> None:
        await aio.until(lambda: PICKED in desk.composer.model_ids(), what="the models")
        assert desk.composer.current_model() == PICKED
        desk.composer.several.set_chosen(list(MIXED))
        desk.composer.set_text("Which wood?")
        desk.composer.submit()
        await aio.until(lambda: beam.view is not None and len(beam.view.columns) == 3,
                        what="the columns")
        view = beam.view
        assert view is not None
        for server in servers:
            await aio.until(lambda s=server: len(s.requests) == 1, what="three requests")
        gates[1].set()  # the unpriced model answers first
        odd = view.columns[1]
        await aio.until(lambda: bool(odd.column.key), what="the unpriced reply's end")
        assert odd.column.facts == "unpriced" == odd.facts.text()
        gates[0].set()
        gates[2].set()
        await aio.until(lambda: not desk.controller.turns.is_running(), what="the replies")
        await aio.until(lambda: all(col.column.key for col in view.columns), what="filled")
        await desk.controller.tasks.idle()
        facts = [col.facts.text().split(" · ")[0] for col in view.columns]
        assert facts[0].startswith("$") and facts[1:] == ["unpriced", "free"]

        sid = desk.controller.current_session_id
        assert sid is not None
        assert desk.composer.several.chosen() == list(MIXED)
        assert "Omni" not in desk.window.subtitle.text()  # the picker's model was not asked
        assert desk.composer.current_model() == MIXED[0]
        mini = await desk.services.chat.estimate_next_cost(sid, "", model=MIXED[0])
        assert mini.priced and mini.prompt_usd > 0
        shown = await c.costs.estimate(sid)
        assert shown == f"next ≈ {money(mini.prompt_usd)} + 1 unpriced"
        assert c.costs.estimate_label.text() == shown
        tip = c.costs.estimate_label.toolTip()
        assert all(name in tip for name in ("Mini", "Odd", "Home")) and "Omni" not in tip

    aio.run(scenario(), timeout=120)
