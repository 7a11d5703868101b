"""A laid-out message body: its code blocks' copy buttons and its links are found under
the pointer, and nothing is found where there is only text."""

from __future__ import annotations

from PySide6.QtCore import QPointF
from PySide6.QtWidgets import QApplication

from treechat.ui.richtext.markdown import render_markdown
from treechat.ui.richtext.theme import MarkdownTheme


def test_copy_buttons_and_links_are_found_under_the_pointer(qapp: QApplication) -> None:
    theme = MarkdownTheme.from_palette(qapp.palette(), qapp.font())
    text = "See [the docs](https://example.org/docs).\n\n```python\nprint(1)\n```\n"
    rendered = render_markdown(text, 420, theme)
    (block,) = rendered.code_blocks
    assert rendered.copy_button_at(block.copy_rect.center()) == 0
    assert rendered.copy_button_at(QPointF(-50, -50)) is None
    layout = rendered.document.documentLayout()
    first = rendered.document.begin()
    link_x = next(x for x in range(0, 400, 2)
                  if rendered.anchor_at(QPointF(x, layout.blockBoundingRect(first).center().y())))
    hit = rendered.anchor_at(QPointF(link_x, layout.blockBoundingRect(first).center().y()))
    assert hit == "https://example.org/docs"
    assert rendered.anchor_at(QPointF(1, 1)) == ""  # "See" is only text
    assert rendered.height > 0 and rendered.width == 420
