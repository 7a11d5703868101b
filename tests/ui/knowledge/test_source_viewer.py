"""The viewer a citation opens: the cited passage found as the index cut the file, the view
scrolled to it with its lines highlighted and their numbers marked, in either scheme; a file
that cannot be shown says why; "Open in another app" asks for the file by its path."""

from __future__ import annotations

from PySide6.QtWidgets import QPlainTextEdit
from pytestqt.qtbot import QtBot

from treechat.core.chunking import chunks
from treechat.ui.common.theme import DARK, LIGHT, palette_for
from treechat.ui.knowledge.source_viewer import SourceViewer, cited_span


def long_notes() -> str:
    paras = [f"Paragraph {n} says little about anything at all.\nIt has two lines."
             for n in range(1, 60)]
    paras[40] = "The shed key hangs behind the pantry door.\nAsk Ada if it is not there.\n" \
                "She keeps a spare one."
    return "\n\n".join(paras) + "\n"


def line_of(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


def marked_rows(viewer: SourceViewer) -> list[int]:
    """The lines whose rows the viewer paints in the mark's colour, at the right edge."""
    text = viewer.text
    shot = text.viewport().grab().toImage()
    colour = text.mark_colour().name()
    out = []
    block = text.firstVisibleBlock()
    while block.isValid():
        rect = text.blockBoundingGeometry(block).translated(text.contentOffset())
        if rect.top() >= shot.height():
            break
        y = int(rect.center().y())
        if 0 <= y < shot.height() and shot.pixelColor(shot.width() - 2, y).name() == colour:
            out.append(block.blockNumber() + 1)
        block = block.next()
    return out


def test_the_cited_span_is_the_passage_the_index_cut_at_that_line() -> None:
    text = long_notes()
    line = line_of(text, "The shed key")
    assert cited_span(text, line) == (line, line + 2)
    # the index's own cut starts a passage there, and it ends where the span says
    starts = {text[:offset].count("\n") + 1: piece for offset, piece in chunks(text)}
    assert starts[line].rstrip().count("\n") == 2


def test_a_line_no_passage_starts_at_is_shown_alone_and_past_the_end_the_last() -> None:
    text = long_notes()
    inside = line_of(text, "Ask Ada")
    assert cited_span(text, inside) == (inside, inside)
    last = text.count("\n")
    assert cited_span(text, 10_000) == (last, last)
    assert cited_span("", 3) == (1, 1)


def test_the_viewer_scrolls_to_the_cited_lines_and_marks_them(qtbot: QtBot) -> None:
    text = long_notes()
    line = line_of(text, "The shed key")
    viewer = SourceViewer("/home/ada/notes/garden.md")
    qtbot.addWidget(viewer)
    viewer.resize(600, 300)
    viewer.show()
    qtbot.waitExposed(viewer)
    viewer.show_text(text, cited_span(text, line))
    assert viewer.highlighted() == (line, line + 2)
    assert marked_rows(viewer) == [line, line + 1, line + 2]
    assert viewer.text.marked_text().startswith("The shed key")
    assert viewer.text.marked_text().endswith("She keeps a spare one.")
    top = viewer.text.first_visible_line()
    assert top < line and line + 2 < top + viewer.text._lines_shown()
    assert top > 1  # scrolled: the passage is far down the file
    assert viewer.text.textCursor().blockNumber() + 1 == line
    assert viewer.detail.text().endswith(f"lines {line}–{line + 2}")
    assert viewer.windowTitle() == "garden.md" and viewer.text.isReadOnly()

    # another citation of the same file moves the mark, the text is not laid out again
    viewer.show_text(text, cited_span(text, 1))
    assert viewer.highlighted() == (1, 2) and viewer.text.first_visible_line() == 1
    assert viewer.detail.text().endswith("lines 1–2")


def test_the_mark_spans_the_width_and_every_row_of_a_wrapped_line_in_either_scheme(
    qtbot: QtBot,
) -> None:
    long_line = " ".join(["The shed key hangs behind the pantry door."] * 8)
    viewer = SourceViewer("/n/a.txt")
    qtbot.addWidget(viewer)
    viewer.resize(420, 300)
    viewer.show()
    qtbot.waitExposed(viewer)
    viewer.show_text(f"one\n{long_line}\nthree\n", (2, 2))
    text = viewer.text
    block = text.document().findBlockByNumber(1)
    rect = text.blockBoundingGeometry(block).translated(text.contentOffset())
    assert rect.height() > 3 * text.fontMetrics().height()  # wrapped over several rows
    for scheme in (LIGHT, DARK):
        viewer.setPalette(palette_for(scheme))
        text.setPalette(palette_for(scheme))
        shot = text.viewport().grab().toImage()
        right = text.viewport().width() - 2
        for y in (rect.top() + 2, rect.center().y(), rect.bottom() - 2):
            assert shot.pixelColor(right, int(y)).name() == scheme.accent_soft, (scheme, y)
        below = text.blockBoundingGeometry(block.next()).translated(text.contentOffset())
        assert shot.pixelColor(right, int(below.center().y())).name() != scheme.accent_soft


def test_a_file_that_cannot_be_shown_says_why_and_can_still_be_opened(qtbot: QtBot) -> None:
    viewer = SourceViewer("/n/photo.txt")
    qtbot.addWidget(viewer)
    viewer.show()
    viewer.show_problem("photo.txt cannot be shown here: it is not a text file")
    assert viewer.status.isVisible() and not viewer.text.isVisible()
    assert "not a text file" in viewer.status.text()
    with qtbot.waitSignal(viewer.openElsewhereRequested) as asked:
        viewer.elsewhere.click()
    assert asked.args == ["/n/photo.txt"]


def test_prose_wraps_and_code_keeps_its_lines(qtbot: QtBot) -> None:
    wraps = QPlainTextEdit.LineWrapMode.WidgetWidth
    for path, wrapped in (("/n/garden.md", True), ("/n/notes.txt", True), ("/n/README", True),
                          ("/n/app.py", False), ("/n/data.json", False)):
        viewer = SourceViewer(path)
        qtbot.addWidget(viewer)
        assert (viewer.text.lineWrapMode() == wraps) is wrapped, path
