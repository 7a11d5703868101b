"""Files in a message, in the window, through the real services (a DuckDB file, the loopback
provider over HTTP): attached by the paperclip, by a drop, by a paste; the chip's name, size
and token cost; removed before sending; an image reaching the server; its thumbnail opening
full size; a file card opening its text; the choice a model that cannot see offers; and a
message too long for the window sent as a file."""

from __future__ import annotations

import base64
import io
import logging
import os
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent, QGuiApplication, QImage
from PySide6.QtTest import QTest
from PySide6.QtWidgets import QApplication, QFileDialog, QWidget
from tests.support.attachment_files import pdf
from tests.support.loopback_server import LoopbackProvider, Reply
from tests.ui import conftest as ui_conftest

from treechat.core.attachments import human_size, image_tokens, node_attachments
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store
from treechat.ui.chat.attachment_views import ShownAttachment, shown_attachments
from treechat.ui.composer.attach_chips import format_tokens
from treechat.ui.composer.file_chips import FileChip
from treechat.ui.controllers.too_long import AS_FILE_NAME
from treechat.ui.occupancy.format import tokens

from ..conftest import BIG_MODEL, MODEL, Aio, Desk, Seed, choices_for

CLAUDE = "anthropic/claude-3-5-sonnet-20241022"  # litellm knows it sees images

SHOTS = Path(__file__).resolve().parents[3] / "docs" / "screenshots"


SCHEME = os.environ.get("TREECHAT_SCREENSHOT_SCHEME", "")  # "light" or "dark"


def shoot(desk: Desk, name: str, widget: QWidget | None = None) -> None:
    """With TREECHAT_SCREENSHOTS=1 (on a real display), docs/screenshots/attachments-*.png,
    in the scheme TREECHAT_SCREENSHOT_SCHEME names."""
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        QApplication.processEvents()
        suffix = f"-{SCHEME}" if SCHEME else ""
        (widget or desk.window).grab().save(str(SHOTS / f"attachments-{name}{suffix}.png"))


def themed(desk: Desk) -> None:
    """The scheme and the laptop-sized window the screenshots are taken in."""
    if os.environ.get("TREECHAT_SCREENSHOTS") == "1":
        if SCHEME:
            desk.theme.set_mode(SCHEME)
        desk.window.resize(1366, 740)


def png(path: Path, size: tuple[int, int] = (300, 200), color: str = "#3a7bd5") -> Path:
    Image.new("RGB", size, color).save(path, "PNG")
    return path


def ready_chips(desk: Desk) -> list[FileChip]:
    return [c for c in desk.controller.attachments.chips.chips if not c.state.busy]


async def chips_ready(desk: Desk, aio: Aio, n: int) -> None:
    await aio.until(lambda: len(ready_chips(desk)) == n
                    and all(c.state.tokens is not None for c in ready_chips(desk)),
                    what=f"{n} ready chips")


async def turn_done(desk: Desk, aio: Aio, requests: int) -> None:
    await aio.until(lambda: desk.requests() >= requests
                    and not desk.controller.turns.is_running(), what="turn end")
    await desk.controller.tasks.idle()


def send(desk: Desk, text: str) -> None:
    desk.composer.input.setFocus()
    desk.composer.set_text(text)
    QTest.keyClick(desk.composer.input, Qt.Key.Key_Return)


def choose_model(desk: Desk, model: str) -> None:
    composer = desk.composer
    row = composer.model_ids().index(model)
    composer.picker.setCurrentIndex(row)  # as a click in the picker: modelChanged fires


KEPT: list[QMimeData] = []  # an event does not own its data: kept alive while it is read


def drop_files(target: object, paths: list[Path]) -> QDropEvent:
    """What the drag manager delivers when files are dropped on `target`: an enter, then
    the drop."""
    data = QMimeData()
    KEPT.append(data)
    data.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, data,
                            Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, enter)  # type: ignore[arg-type]
    assert enter.isAccepted()
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, data,
                       Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(target, event)  # type: ignore[arg-type]
    return event


def image_urls(body: dict[str, object]) -> list[str]:
    out = []
    for message in body["messages"]:  # type: ignore[attr-defined]
        content = message.get("content")
        if isinstance(content, list):
            out += [b["image_url"]["url"] for b in content if b.get("type") == "image_url"]
    return out


def no_traceback(caplog: pytest.LogCaptureFixture) -> None:
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert failures == [], [r.getMessage() for r in failures]


def test_paperclip_chip_shows_name_size_and_cost_and_the_image_reaches_the_server(
    desk: Desk, aio: Aio, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The file dialog is Qt's (the one boundary replaced: it would wait for a person); what
    it returns is a real file on disk."""
    caplog.set_level(logging.INFO)
    picture = png(tmp_path / "Q&amp;A <b>café.png", (1600, 1000))
    notes = tmp_path / "notes.md"
    notes.write_text("# Notes\n\nThe chart shows the river's flow by month.\n", "utf-8")
    monkeypatch.setattr(QFileDialog, "getOpenFileNames",
                        staticmethod(lambda *a, **k: ([str(picture), str(notes)], "")))
    desk.provider.queue(Reply(text="a blue chart"), Reply(text="again"))

    themed(desk)
    async def scenario() -> None:
        choose_model(desk, BIG_MODEL)  # litellm says GPT-4o can see
        QTest.mouseClick(desk.composer.attach_button, Qt.MouseButton.LeftButton)
        await chips_ready(desk, aio, 2)
        chips = desk.controller.attachments.chips.chips
        image_chip, text_chip = chips
        # a name is made safe (no separators or angle brackets) and shown as text, not markup
        assert image_chip.name.text() == "Q&amp;A _b_café.png"
        assert image_chip.name.textFormat() == Qt.TextFormat.PlainText
        assert image_chip.size_label.text() == human_size(picture.stat().st_size)
        assert image_chip.cost.text() == format_tokens(image_tokens(1600, 1000, "openai"))
        assert text_chip.name.text() == "notes.md"
        assert "tokens" in text_chip.cost.text()
        # the chips never widen the window
        assert desk.controller.attachments.chips.minimumSizeHint().width() == 0
        shoot(desk, "chips")
        send(desk, "What does this chart show?")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    request = desk.provider.requests[-1]
    urls = image_urls(request.body)
    assert len(urls) == 1 and urls[0].startswith("data:image/")
    sent = base64.b64decode(urls[0].split(",", 1)[1])
    with Image.open(io.BytesIO(sent)) as im:  # downscaled to OpenAI's limits before sending
        assert max(im.size) <= 2048 and min(im.size) <= 768
    assert "The chart shows the river's flow" in str(request.body)
    assert desk.controller.attachments.chips.chips == []
    view = desk.controller.current_view
    assert view is not None
    user = [n for n in view.path if n.role == "user"][-1]
    refs = node_attachments(user.metadata)
    assert [r.name for r in refs] == ["Q&amp;A _b_café.png", "notes.md"]
    no_traceback(caplog)


def test_a_drop_on_the_composer_and_on_the_chat_attaches_and_x_removes_before_sending(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    one = png(tmp_path / "one.png")
    two = tmp_path / "two.txt"
    two.write_text("second file\n", "utf-8")
    desk.provider.queue(Reply(text="ok"))

    async def scenario() -> None:
        event = drop_files(desk.composer.input.viewport(), [one])
        assert event.isAccepted()
        drop_files(desk.chat.list.viewport(), [two])
        await chips_ready(desk, aio, 2)
        first = desk.controller.attachments.chips.chips[0]
        QTest.mouseClick(first.remove_button, Qt.MouseButton.LeftButton)
        await aio.settle()
        assert [c.name.text() for c in desk.controller.attachments.chips.chips] == ["two.txt"]
        send(desk, "Only the text file")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    body = desk.provider.requests[-1].body
    assert image_urls(body) == []
    assert "second file" in str(body)


def test_a_pasted_image_becomes_a_chip(desk: Desk, aio: Aio) -> None:
    image = QImage(640, 480, QImage.Format.Format_RGB32)
    image.fill(Qt.GlobalColor.darkCyan)
    QGuiApplication.clipboard().setImage(image)

    async def scenario() -> None:
        desk.composer.input.setFocus()
        QTest.keyClick(desk.composer.input, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)
        await chips_ready(desk, aio, 1)

    aio.run(scenario())
    chip = desk.controller.attachments.chips.chips[0]
    assert chip.name.text() == "pasted image.png"
    assert desk.composer.text() == ""  # the image is not pasted as text


def test_a_refused_file_says_why_and_keeps_the_rest(desk: Desk, aio: Aio,
                                                     tmp_path: Path) -> None:
    good = png(tmp_path / "good.png")
    broken = tmp_path / "broken.png"
    broken.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\x00" * 40)
    binary = tmp_path / "tool.bin"
    binary.write_bytes(bytes(range(256)) * 8)

    async def scenario() -> None:
        desk.composer.set_text("kept")
        drop_files(desk.composer.input.viewport(), [good, broken])
        await chips_ready(desk, aio, 1)
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the reason")
        assert "broken.png is not a readable image" in desk.window.banner.message.text()
        drop_files(desk.composer.input.viewport(), [binary])
        await aio.until(lambda: "binary" in desk.window.banner.message.text(), what="binary")

    aio.run(scenario())
    assert [c.name.text() for c in desk.controller.attachments.chips.chips] == ["good.png"]
    assert desk.composer.text() == "kept"


def test_the_cost_follows_the_model_s_provider(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Choosing a model of Anthropic's in the picker prices the chip by Anthropic's rule;
    going back prices it by OpenAI's again."""
    def with_claude(provider: LoopbackProvider) -> tuple[ModelChoice, ...]:
        return (*choices_for(provider),
                ModelChoice(CLAUDE, "Loopback Claude", "anthropic",
                            api_base=provider.anthropic_base))

    monkeypatch.setattr(ui_conftest, "choices_for", with_claude)
    desk = desk_with(None)
    picture = png(tmp_path / "wide.png", (2000, 1000))
    controller = desk.controller.attachments

    async def scenario() -> None:
        choose_model(desk, BIG_MODEL)
        controller.add_paths([picture])
        await chips_ready(desk, aio, 1)
        chip = controller.chips.chips[0]
        assert chip.cost.text() == format_tokens(image_tokens(2000, 1000, "openai"))
        choose_model(desk, CLAUDE)
        anthropic = format_tokens(image_tokens(2000, 1000, "anthropic"))
        assert anthropic != chip.cost.text()
        await aio.until(lambda: controller.chips.chips[0].cost.text() == anthropic,
                        what="the chip priced for Anthropic")
        choose_model(desk, BIG_MODEL)  # and back
        openai = format_tokens(image_tokens(2000, 1000, "openai"))
        await aio.until(lambda: controller.chips.chips[0].cost.text() == openai,
                        what="the chip priced for OpenAI again")

    aio.run(scenario())


def test_the_thumbnail_shows_and_opens_full_size_and_a_card_opens_the_text(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    picture = png(tmp_path / "photo.png", (900, 600), "#d53a5b")
    doc = tmp_path / "report.txt"
    doc.write_text("Quarterly report\nAll is well.\n", "utf-8")
    paper = tmp_path / "paper.pdf"
    paper.write_bytes(pdf(["First page of the paper", "Second page, the results"]))
    desk.provider.queue(Reply(text="nice"))
    controller = desk.controller.attachments

    themed(desk)
    async def scenario() -> None:
        choose_model(desk, BIG_MODEL)
        controller.add_paths([picture, doc, paper])
        await chips_ready(desk, aio, 3)
        send(desk, "Look")
        await turn_done(desk, aio, 1)
        view = desk.controller.current_view
        assert view is not None
        user = [n for n in view.path if n.role == "user"][-1]
        shown = shown_attachments(user.metadata)
        assert [s.kind for s in shown] == ["image", "text", "pdf"]
        assert shown[0].width == 900 and shown[0].height == 600
        assert shown[2].detail.startswith("PDF · 2 pages · ")
        # the row lays out a thumbnail and a card, and paints the thumbnail once decoded
        row = next(r for r in desk.chat.model.rows if r.node_id == user.id)
        layout = desk.chat.delegate.layouter.layout(row)
        assert [t.item.kind for t in layout.tiles] == ["image", "text", "pdf"]
        desk.chat.list.viewport().repaint()
        await aio.until(lambda: controller.thumbnails.get(shown[0].sha256) is not None,
                        what="the thumbnail")
        thumb = controller.thumbnails.get(shown[0].sha256)
        assert thumb is not None and max(thumb.width(), thumb.height()) <= 224
        shoot(desk, "message")
        # a click on the thumbnail opens the image full size
        index = desk.chat.model.index(desk.chat.model.index_of(row.key), 0)
        top = desk.chat.list.visualRect(index).topLeft()
        center = layout.tiles[0].rect.center()
        QTest.mouseClick(desk.chat.list.viewport(), Qt.MouseButton.LeftButton,
                         Qt.KeyboardModifier.NoModifier,
                         QPoint(int(top.x() + center.x()), int(top.y() + center.y())))
        await aio.until(lambda: controller.viewers and not controller.viewers[-1]
                        ._image.isNull(), what="the full image")
        viewer = controller.viewers[-1]
        assert (viewer._image.width(), viewer._image.height()) == (900, 600)
        shoot(desk, "viewer-image", viewer)
        viewer.close()
        # the card opens the text, and Save… writes the bytes back under a safe name
        card = controller.open_attachment(user.id, 1)
        assert card is not None
        await aio.until(lambda: "Quarterly report" in card.text.toPlainText(), what="text")
        assert card.text.isReadOnly()
        target = tmp_path / "out" / card.suggested_name()
        target.parent.mkdir()
        card.save_to(str(target))
        await aio.until(target.exists, what="the saved file")
        assert target.read_bytes() == doc.read_bytes()
        card.close()
        # a PDF's card opens its text page by page
        reader = controller.open_attachment(user.id, 2)
        assert reader is not None
        await aio.until(lambda: "Second page, the results" in reader.text.toPlainText(),
                        what="the PDF's text")
        assert "--- page 2 of 2 ---" in reader.text.toPlainText()
        shoot(desk, "viewer-text", reader)
        reader.close()

    aio.run(scenario())


def test_a_model_that_cannot_see_offers_a_choice_before_anything_is_sent(
    desk: Desk, aio: Aio, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    picture = png(tmp_path / "diagram.png")
    desk.provider.queue(Reply(text="seen"), Reply(text="text only"))
    controller = desk.controller.attachments

    themed(desk)
    async def scenario() -> None:
        choose_model(desk, MODEL)  # litellm does not know it: it cannot see
        controller.add_paths([picture])
        await chips_ready(desk, aio, 1)
        send(desk, "Describe the diagram")
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the choice")
        banner = desk.window.banner
        assert banner.title.text() == "This model cannot see images"
        assert banner.action_keys() == ["switch_to_vision", "send_without_images", "cancel"]
        assert desk.requests() == 0 and desk.composer.text() == "Describe the diagram"
        shoot(desk, "no-vision-choice")
        QTest.mouseClick(banner.button("cancel"), Qt.MouseButton.LeftButton)
        await aio.settle()
        assert desk.requests() == 0 and len(controller.chips.chips) == 1
        # switch to a model that sees, and send
        send(desk, "Describe the diagram")
        await aio.until(lambda: banner.button("switch_to_vision") is not None
                        and not banner.isHidden(), what="the choice again")
        QTest.mouseClick(banner.button("switch_to_vision"), Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 1)
        assert desk.composer.current_model() == BIG_MODEL
        assert len(image_urls(desk.provider.requests[-1].body)) == 1
        # back on the blind model: send without the images
        choose_model(desk, MODEL)
        controller.add_paths([picture])
        await chips_ready(desk, aio, 1)
        send(desk, "Just the words")
        await aio.until(lambda: banner.button("send_without_images") is not None
                        and not banner.isHidden(), what="the third choice")
        QTest.mouseClick(banner.button("send_without_images"), Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 2)

    aio.run(scenario())
    assert image_urls(desk.provider.requests[-1].body) == []
    assert desk.window.banner.kind() != "unavailable"
    no_traceback(caplog)


def test_a_message_too_long_is_sent_as_a_file_when_asked(
    desk: Desk, aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    paste = " ".join(f"line{i} of the log file" for i in range(40_000))
    desk.provider.queue(Reply(text="read the file"))

    async def scenario() -> None:
        send(desk, paste)
        await aio.until(lambda: not desk.window.banner.isHidden(), what="the choice")
        assert desk.window.banner.action_keys() == ["cut_to_fit", "send_as_file", "cancel"]
        assert desk.requests() == 0
        QTest.mouseClick(desk.window.banner.button("send_as_file"), Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    view = desk.controller.current_view
    assert view is not None
    user = [n for n in view.path if n.role == "user"][-1]
    (ref,) = node_attachments(user.metadata)
    assert ref.name == AS_FILE_NAME and ref.size == len(paste.encode())
    assert ref.cut_to > 0  # read as far as it fits
    body = str(desk.provider.requests[-1].body)
    assert "line0 of the log file" in body and "line39999 of the log file" in body
    ring = desk.composer.ring.occupancy
    assert ring is not None and ring.total_used <= ring.window
    assert dict(ring.breakdown)["attachments"] > 0
    # the /context dialog names the category and gives the same figure
    desk.controller.occupancy.open_dialog()
    dialog = desk.controller.occupancy.context_dialog
    assert dialog is not None and dialog.occupancy is ring
    rows = {name: amount for name, amount, _share in dialog.table_rows()}
    assert rows["Attachments"] == tokens(dict(ring.breakdown)["attachments"])
    dialog.close()
    no_traceback(caplog)


def test_an_imported_placeholder_is_a_greyed_card_not_an_error() -> None:
    meta = {"attachments": [{"placeholder": True, "kind": "image", "name": "chart.png",
                             "size_bytes": 2048}]}
    (item,) = shown_attachments(meta)
    assert item == ShownAttachment("placeholder", "chart.png", 2048, "image")
    assert "did not carry" in item.tooltip


def test_many_chips_with_long_names_never_widen_the_window(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    """Issue 14's laptop: 1280×720 with the dock open, a row of chips wraps instead."""
    window = desk.window
    window.dock.show()
    window.resize(1280, 720)
    paths = []
    for i in range(8):
        path = tmp_path / (f"a rather long file name for a quarterly report, part {i} " * 2
                           + ".txt")
        path.write_text(f"part {i}\n", "utf-8")
        paths.append(path)

    async def scenario() -> None:
        await aio.settle(0.2)
        before = window.width()
        desk.controller.attachments.add_paths(paths)
        await chips_ready(desk, aio, 8)
        await aio.settle(0.2)
        assert window.width() == before <= 1280
        assert window.minimumSizeHint().width() <= 1280
        bar = desk.controller.attachments.chips
        assert all(c.geometry().right() <= bar.width() for c in bar.chips)
        assert bar.height() >= bar.heightForWidth(bar.width()) > bar.chips[0].height()

    aio.run(scenario())


def imported_chat(store: Store) -> None:
    """A chat as an import leaves it: files the export named but did not carry."""
    store.call(lambda r: r.create_session(Session("imp", "Imported", None, MODEL, 1.0,
                                                  updated_at=1.0)))
    user = Node("imp-0", 0, 1.0, "imp", "user", output="Here is my chart [image: chart.png]",
                metadata={"attachments": [{"placeholder": True, "kind": "image",
                                           "name": "chart.png", "size_bytes": 2048}]})
    reply = Node("imp-1", 0, 1.0, "imp", "assistant", output="I made a drawing",
                 predecessor="imp-0",
                 metadata={"attachments": [{"placeholder": True, "kind": "image",
                                            "name": "drawing.webp"}]})
    store.call(lambda r: r.apply_change("imp", Change((user, reply), "imp-1"), 1.0))


def test_an_imported_chat_s_missing_files_are_greyed_cards(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    desk = desk_with(imported_chat)

    async def scenario() -> None:
        await desk.controller.load_session("imp")
        await aio.settle(0.2)

    aio.run(scenario())
    layouter = desk.chat.delegate.layouter
    rows = {r.node_id: r for r in desk.chat.model.rows if r.node_id}
    for node_id, name in (("imp-0", "chart.png"), ("imp-1", "drawing.webp")):
        (tile,) = layouter.layout(rows[node_id]).tiles
        assert tile.item.kind == "placeholder" and tile.item.name == name
        assert "did not carry" in tile.item.tooltip
        # a click on it opens nothing and fails nothing
        assert desk.controller.attachments.open_attachment(node_id, 0) is None
    desk.chat.list.viewport().repaint()
    assert desk.window.banner.isHidden()
    no_traceback(caplog)


def test_a_message_of_files_alone_can_be_sent(desk: Desk, aio: Aio, tmp_path: Path) -> None:
    notes = tmp_path / "notes.txt"
    notes.write_text("only the file speaks\n", "utf-8")
    desk.provider.queue(Reply(text="read it"))

    async def scenario() -> None:
        assert not desk.composer.send_button.isEnabled()
        desk.controller.attachments.add_paths([notes])
        await chips_ready(desk, aio, 1)
        assert desk.composer.send_button.isEnabled()  # nothing typed, a file staged
        QTest.mouseClick(desk.composer.send_button, Qt.MouseButton.LeftButton)
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    assert "only the file speaks" in str(desk.provider.requests[-1].body)
    view = desk.controller.current_view
    assert view is not None
    user = [n for n in view.path if n.role == "user"][-1]
    assert user.text == "" and [r.name for r in node_attachments(user.metadata)] == ["notes.txt"]
    row = next(r for r in desk.chat.model.rows if r.node_id == user.id)
    layout = desk.chat.delegate.layouter.layout(row)
    assert layout.bubble is not None and layout.bubble.width() == 0  # no empty bubble
    assert [t.item.name for t in layout.tiles] == ["notes.txt"]


def test_a_pdf_s_pages_go_as_images_when_asked_from_its_chip(
    desk: Desk, aio: Aio, tmp_path: Path, caplog: pytest.LogCaptureFixture,
) -> None:
    paper = tmp_path / "scan.pdf"
    paper.write_bytes(pdf(["Figure 1: the flow by month", "Table 2: the totals"]))
    desk.provider.queue(Reply(text="two pages read"))

    async def scenario() -> None:
        choose_model(desk, BIG_MODEL)
        drop_files(desk.composer.input, [paper])
        await chips_ready(desk, aio, 1)
        (chip,) = ready_chips(desk)
        text_only = chip.state.tokens
        assert text_only is not None and not chip.state.page_images
        chip.pageImagesToggled.emit(chip.key, True)  # the chip menu's "Also send its pages"
        await aio.until(lambda: ready_chips(desk)[0].state.page_images
                        and ready_chips(desk)[0].state.tokens != text_only,
                        what="the chip recounted with its page images")
        (chip,) = ready_chips(desk)
        assert chip.state.tokens is not None and chip.state.tokens > text_only
        assert "its pages as images too" in chip.toolTip()
        send(desk, "What do the figures show?")
        await turn_done(desk, aio, 1)

    aio.run(scenario())
    body = desk.provider.requests[-1].body
    urls = image_urls(body)
    assert len(urls) == 2 and all(u.startswith("data:image/png;base64,") for u in urls)
    assert "Figure 1: the flow by month" in str(body)  # the text goes as well
    no_traceback(caplog)
