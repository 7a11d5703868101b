"""Markdown to laid-out documents: code blocks (highlighted, with a copy hit-area), lists,
tables, quotes, raw HTML kept as text, wrapping of long words, and the layout cache."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPointF
from PySide6.QtGui import QColor, QFont, QImage, QPainter, QPalette, QTextTable
from PySide6.QtWidgets import QApplication

from treechat.ui.richtext.document_cache import DocumentCache
from treechat.ui.richtext.highlighting import highlight
from treechat.ui.richtext.markdown import render_markdown, render_plain
from treechat.ui.richtext.measure import estimate_height
from treechat.ui.richtext.theme import MarkdownTheme

SAMPLE = """## Parsing JSON

Use **json** with `json.loads` — see [the docs](https://docs.python.org/3/library/json.html).

1. Import the module
2. Call `loads`
   - nested bullet

```python
import json

def load(path):
    return json.load(open(path))  # comment
```

| Function | Input | Output |
|---|---|---|
| `loads` | str | object |
| `load` | file | object |

> Large files should be streamed.
"""


@pytest.fixture
def theme(qapp: QApplication) -> MarkdownTheme:
    font = QFont(qapp.font())
    font.setPointSizeF(10)
    return MarkdownTheme.from_palette(qapp.palette(), font)


def dark_theme(qapp: QApplication) -> MarkdownTheme:
    palette = QPalette(qapp.palette())
    palette.setColor(QPalette.ColorRole.Base, QColor("#18181b"))
    palette.setColor(QPalette.ColorRole.Text, QColor("#e6e6e6"))
    return MarkdownTheme.from_palette(palette, qapp.font())


def test_code_blocks_are_found_with_language_text_and_copy_button(theme: MarkdownTheme) -> None:
    rendered = render_markdown(SAMPLE, 560, theme)
    (block,) = rendered.code_blocks
    assert block.language == "python"
    assert block.text == (
        "import json\n\ndef load(path):\n    return json.load(open(path))  # comment"
    )
    # the chrome spans the column; the copy button sits in its header, inside it
    assert block.rect.width() == pytest.approx(560)
    assert block.rect.contains(block.copy_rect)
    assert rendered.copy_button_at(block.copy_rect.center()) == 0
    assert rendered.copy_button_at(QPointF(block.rect.left() + 5, block.rect.bottom() - 5)) is None
    # the code text sits inside its background
    doc = rendered.document
    layout = doc.documentLayout()
    cursor_block = doc.findBlock(doc.toPlainText().index("def load"))
    assert block.rect.contains(layout.blockBoundingRect(cursor_block))


def test_code_is_highlighted_and_unknown_languages_are_left_plain(
    theme: MarkdownTheme, qapp: QApplication
) -> None:
    runs = highlight("def f():\n    return 1\n", "python", dark=False)
    keyword = [fmt for offset, length, fmt in runs if (offset, length) == (0, 3)]
    assert keyword and keyword[0].foreground().color().isValid()
    assert highlight("whatever", "no-such-language", dark=False) == []
    assert highlight("x", "", dark=False) == []
    # the document carries the colours
    rendered = render_markdown("```python\ndef f(): pass\n```", 400, theme)
    fragment = rendered.document.begin().begin().fragment()
    assert fragment.text() == "def"
    assert fragment.charFormat().foreground().color() == keyword[0].foreground().color()
    # dark palettes get a dark-friendly style
    dark = highlight("def f():\n    return 1\n", "python", dark=True)
    assert dark[0][2].foreground().color() != keyword[0].foreground().color()
    assert dark_theme(qapp).dark and not theme.dark


def test_diff_lines_are_coloured_to_the_last_line(theme: MarkdownTheme) -> None:
    code = "-old line\n+new line"
    runs = highlight(code, "diff", dark=False)
    covered = {code[o:o + n] for o, n, _ in runs}
    assert "-old line" in covered and "+new line" in covered  # no error tokens at the end


def test_lists_tables_quotes_and_inline_styles(theme: MarkdownTheme) -> None:
    rendered = render_markdown(SAMPLE, 560, theme)
    doc = rendered.document
    text = doc.toPlainText()
    assert "**" not in text and "`" not in text and "##" not in text
    lists = {doc.findBlockByNumber(i).textList() for i in range(doc.blockCount())} - {None}
    assert len(lists) == 2
    tables = [f for f in doc.rootFrame().childFrames() if isinstance(f, QTextTable)]
    assert len(tables) == 1
    table = tables[0]
    assert (table.rows(), table.columns()) == (3, 3)
    header = table.cellAt(0, 0)
    first = header.firstCursorPosition().block()
    # Qt leaves a stray empty paragraph in a table after a code block: it is hidden
    visible = [b for b in _cell_blocks(header) if b.isVisible()]
    assert [b.text() for b in visible] == ["Function"]
    assert visible[0].charFormat().fontWeight() >= QFont.Weight.DemiBold or any(
        f.charFormat().fontWeight() >= QFont.Weight.DemiBold for f in _fragments(visible[0]))
    assert first.isValid()
    assert len(rendered.quote_bars) == 1  # the blockquote gets its bar
    links = [f for b in _blocks(doc) for f in _fragments(b) if f.charFormat().isAnchor()]
    assert links and links[0].charFormat().anchorHref().startswith("https://docs.python.org")
    inline = [f for b in _blocks(doc) for f in _fragments(b) if f.text() == "json.loads"]
    assert inline and inline[0].charFormat().background().color() == theme.inline_code_bg


def test_raw_html_and_images_are_shown_as_text_and_nothing_is_loaded(theme: MarkdownTheme) -> None:
    rendered = render_markdown("a <b>bold</b> <img src='http://example.com/x.png'> z", 400,
                               theme)
    assert "<b>bold</b>" in rendered.document.toPlainText()
    assert "<img src=" in rendered.document.toPlainText()
    pictured = render_markdown("see ![a cat](http://example.com/cat.png) here", 400, theme)
    assert pictured.document.toPlainText() == "see [image: a cat] here"
    link = [f for b in _blocks(pictured.document) for f in _fragments(b)
            if f.text() == "[image: a cat]"]
    assert link and link[0].charFormat().anchorHref() == "http://example.com/cat.png"


def test_long_unbroken_text_wraps_inside_the_width(theme: MarkdownTheme) -> None:
    word = "a1b2c3d4" * 200
    for rendered in (render_markdown(word, 300, theme), render_plain(word, 300, theme),
                     render_markdown(f"```\n{word}\n```", 300, theme)):
        assert rendered.document.size().width() <= 300.5
        assert rendered.natural_width <= 300
        assert rendered.height > 10 * 14  # it wrapped onto many lines


def test_plain_text_keeps_what_was_typed(theme: MarkdownTheme) -> None:
    typed = "**not bold**\n  indented\n\n# not a heading"
    rendered = render_plain(typed, 400, theme)
    assert rendered.document.toPlainText() == typed
    assert rendered.code_blocks == ()
    short = render_plain("hi", 400, theme)
    assert short.natural_width < 40  # bubbles shrink to short messages


def test_cache_reuses_laid_out_documents_per_key(theme: MarkdownTheme) -> None:
    cache = DocumentCache(capacity=2)
    builds: list[int] = []

    def build(width: int) -> object:
        builds.append(width)
        return render_markdown(SAMPLE, width, theme)

    first = cache.get(("n1", 400), lambda: build(400))  # type: ignore[arg-type,return-value]
    again = cache.get(("n1", 400), lambda: build(400))  # type: ignore[arg-type,return-value]
    assert first is again and builds == [400]
    cache.get(("n1", 500), lambda: build(500))  # type: ignore[arg-type,return-value]
    cache.get(("n2", 400), lambda: build(400))  # type: ignore[arg-type,return-value]
    assert len(cache) == 2  # least recently used went first
    cache.get(("n1", 400), lambda: build(400))  # type: ignore[arg-type,return-value]
    assert builds == [400, 500, 400, 400]


def test_estimates_are_in_the_right_range(theme: MarkdownTheme) -> None:
    for text in ("short", "word " * 400, SAMPLE, "\n\n".join("a line" for _ in range(50))):
        exact = render_markdown(text, 500, theme).height
        guess = estimate_height(text, 500, theme)
        assert exact / 2.5 <= guess <= exact * 2.5, (text[:20], exact, guess)


def test_paints_code_chrome_and_text(theme: MarkdownTheme) -> None:
    rendered = render_markdown(SAMPLE, 560, theme)
    image = QImage(600, int(rendered.height) + 20, QImage.Format.Format_ARGB32)
    image.fill(QColor("#ffffff"))
    painter = QPainter(image)
    rendered.paint(painter, QPointF(20, 10), text_color=QColor("#000000"), hovered_copy=0)
    painter.end()
    block = rendered.code_blocks[0]
    inside = block.rect.translated(20, 10)
    probe = image.pixelColor(int(inside.right() - 24), int(inside.bottom() - 5))
    assert probe.name() == theme.code_bg.name()  # the code background was painted
    text_pixels = sum(
        1 for x in range(20, 300) for y in range(10, 30)
        if image.pixelColor(x, y).lightnessF() < 0.5
    )
    assert text_pixels > 20  # the heading was drawn


def _blocks(doc):  # type: ignore[no-untyped-def]
    block = doc.begin()
    while block.isValid():
        yield block
        block = block.next()


def _fragments(block):  # type: ignore[no-untyped-def]
    it = block.begin()
    while not it.atEnd():
        yield it.fragment()
        it += 1


def _cell_blocks(cell):  # type: ignore[no-untyped-def]
    block = cell.firstCursorPosition().block()
    end = cell.lastCursorPosition().block()
    while block.isValid():
        yield block
        if block == end:
            break
        block = block.next()
