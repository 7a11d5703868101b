"""Laid-out documents are kept per key: painting a row again never lays it out again, and
the least recently used goes first when the cache is full."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from treechat.ui.richtext.document_cache import DocumentCache
from treechat.ui.richtext.markdown import render_markdown
from treechat.ui.richtext.rendered import RenderedText
from treechat.ui.richtext.theme import MarkdownTheme


def test_a_document_is_laid_out_once_and_the_oldest_leaves_first(qapp: QApplication) -> None:
    theme = MarkdownTheme.from_palette(qapp.palette(), qapp.font())
    cache = DocumentCache(capacity=2)
    built: list[str] = []

    def build(text: str) -> RenderedText:
        built.append(text)
        return render_markdown(text, 300, theme)

    first = cache.get(("a", 300), lambda: build("**one**"))
    assert cache.get(("a", 300), lambda: build("**one**")) is first
    cache.get(("b", 300), lambda: build("two"))
    cache.get(("a", 300), lambda: build("**one**"))  # a is now the most recently used
    cache.get(("c", 300), lambda: build("three"))  # b leaves
    assert len(cache) == 2 and cache.misses == 3
    cache.get(("b", 300), lambda: build("two"))
    assert built == ["**one**", "two", "three", "two"]
    cache.clear()
    assert len(cache) == 0
