"""The viewer a citation opens: the cited passage found as the index cut the file, the view
scrolled to it with its lines highlighted and their numbers marked, in either scheme; a file
that cannot be shown says why; "Open in another app" asks for the file by its path."""

from __future__ import annotations

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
    marks = viewer.text.extraSelections()
    assert [m.cursor.blockNumber() + 1 for m in marks] == [line, line + 1, line + 2]
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


def test_the_mark_follows_the_scheme(qtbot: QtBot) -> None:
    viewer = SourceViewer("/n/a.txt")
    qtbot.addWidget(viewer)
    viewer.show_text("one\ntwo\n", (2, 2))
    colours = []
    for scheme in (LIGHT, DARK):
        viewer.setPalette(palette_for(scheme))
        viewer.text.setPalette(palette_for(scheme))
        (mark,) = viewer.text.extraSelections()
        assert mark.cursor.blockNumber() == 1
        colours.append(mark.format.background().color().name())
    assert colours == [LIGHT.accent_soft, DARK.accent_soft]


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
