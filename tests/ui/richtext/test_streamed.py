"""A reply laid out as it streams: at every flush the document is the one the whole text so
far makes (text, block formats, height, code blocks), while only the block still being
written is parsed again."""

from __future__ import annotations

import pytest
from PySide6.QtGui import QTextDocument
from PySide6.QtWidgets import QApplication

from treechat.ui.richtext.markdown import render_markdown
from treechat.ui.richtext.rendered import RenderedText
from treechat.ui.richtext.streamed import StreamedMarkdown, finished_length
from treechat.ui.richtext.theme import MarkdownTheme

REPLY = """# Choosing a wood

Maple is *hard* and pale; birch is cheaper. See [the guide](https://example.org/wood).

## Steps

1. Measure the shelf
2. Cut the boards

   with a fine saw

- a loose item

- another one

```python
def cut(board, length):
    return board[:length]  # keep the rest

x = 1
```

```python
print("a second block of the same language")
```

| Wood | Hardness |
|---|---|
| maple | high |
| birch | medium |

***

| after | a rule |
|---|---|
| x | y |

```
empty last line:

```

Between.

> Quotes stay quotes.
>
> Even over two paragraphs.

Text after everything, with `inline code` and an ![image](https://example.org/a.png).

    indented code after a blank line

Last words."""


@pytest.fixture
def theme(qapp: QApplication) -> MarkdownTheme:
    return MarkdownTheme.from_palette(qapp.palette(), qapp.font())


def blocks(doc: QTextDocument) -> list[tuple[object, ...]]:
    out = []
    block = doc.begin()
    while block.isValid():
        fmt = block.blockFormat()
        chars = []
        it = block.begin()
        while not it.atEnd():
            frag = it.fragment()
            cf = frag.charFormat()
            chars.append((frag.text(), cf.fontPointSize(), cf.fontWeight(), cf.isAnchor(),
                          cf.anchorHref(), cf.fontFamilies(), cf.foreground().color().name()))
            it += 1
        out.append((block.text(), fmt.headingLevel(), fmt.topMargin(), fmt.bottomMargin(),
                    fmt.leftMargin(), fmt.lineHeight(), fmt.indent(), block.isVisible(),
                    tuple(chars)))
        block = block.next()
    return out


def same(streamed: RenderedText, whole: RenderedText) -> None:
    assert streamed.document.toPlainText() == whole.document.toPlainText()
    assert blocks(streamed.document) == blocks(whole.document)
    assert streamed.height == pytest.approx(whole.height, abs=0.5)
    assert [(b.text, b.language, b.rect) for b in streamed.code_blocks] == [
        (b.text, b.language, b.rect) for b in whole.code_blocks]
    assert streamed.quote_bars == whole.quote_bars
    assert streamed.top == whole.top


def test_every_flush_shows_what_the_whole_text_so_far_shows(theme: MarkdownTheme) -> None:
    streamed = StreamedMarkdown()
    # pieces of uneven sizes, cutting through words, fences and table rows
    at, size = 0, 1
    while at < len(REPLY):
        at = min(len(REPLY), at + size)
        size = size % 23 + 3
        same(streamed.render(REPLY[:at], 560, theme), render_markdown(REPLY[:at], 560, theme))


def test_only_the_tail_is_parsed_again(theme: MarkdownTheme) -> None:
    """A long reply streamed in 400 pieces: each flush parses the paragraph being written
    and the one before it (whose end is not known until the next line starts), never the
    whole reply: under a tenth of what laying it out whole at every flush parses."""
    paragraph = "Words about wood and the ways of cutting it, " * 6
    text = "\n\n".join(f"{paragraph}{i}." for i in range(60))
    streamed = StreamedMarkdown()
    step = len(text) // 400 + 1
    whole = 0
    for at in range(step, len(text) + step, step):
        rendered = streamed.render(text[:at], 560, theme)
        whole += len(text[:at])
    same(rendered, render_markdown(text, 560, theme))
    assert streamed.parsed_chars < whole / 10


def test_a_new_width_or_theme_or_a_text_that_does_not_go_on_lays_it_out_afresh(
    theme: MarkdownTheme,
) -> None:
    streamed = StreamedMarkdown()
    streamed.render(REPLY, 560, theme)
    same(streamed.render(REPLY, 400, theme), render_markdown(REPLY, 400, theme))
    other = "Another reply.\n\nWith two paragraphs."
    same(streamed.render(other, 400, theme), render_markdown(other, 400, theme))


@pytest.mark.parametrize(("text", "finished"), [
    ("One.\n\nTwo\n", "One.\n\n"),
    ("One.\n\nTwo\n\nThree\n", "One.\n\nTwo\n\n"),
    ("One.\n\nTwo\n\nThr", "One.\n\n"),  # "Thr" may yet open a table: not known
    ("One.\n\nTw", ""),
    ("# Head\n\n> a quote\n\nText\n", "# Head\n\n> a quote\n\n"),
    ("One.\n\n- a list\n\n- goes on\n", ""),  # a list item never starts a part
    ("```\ncode\n\nstill code\n", ""),  # inside an open fence
    ("One.\n\n    indented\n", ""),
    ("One.\n\n```py\nx\n```\n", ""),  # a fence keeps its neighbours with it
    ("```\ncode\n```\n\nAfter\n\nMore\n", "```\ncode\n```\n\nAfter\n\n"),
    ("One.\n\n| a | b |\n|---|---|\n", ""),  # and so does a table
    ("One.\n\n---\n\nTwo\n", ""),  # and a rule
])
def test_where_the_finished_blocks_end(text: str, finished: str) -> None:
    assert text[:finished_length(text)] == finished
