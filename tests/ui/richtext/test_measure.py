"""A quick guess of a text's laid-out height for rows not measured yet: longer texts and
narrower widths guess taller, code fences add their chrome, and the guess lands near the
real layout."""

from __future__ import annotations

from PySide6.QtWidgets import QApplication

from treechat.ui.richtext.markdown import render_markdown
from treechat.ui.richtext.measure import CODE_CHROME, HeightEstimate, estimate_height
from treechat.ui.richtext.theme import MarkdownTheme

PARAGRAPH = "The quick brown fox jumps over the lazy dog. " * 12


def test_guesses_grow_with_the_text_and_shrink_with_the_width(qapp: QApplication) -> None:
    theme = MarkdownTheme.from_palette(qapp.palette(), qapp.font())
    estimate = HeightEstimate(400, theme)
    assert estimate.of(PARAGRAPH * 2) > estimate.of(PARAGRAPH)
    assert estimate_height(PARAGRAPH, 200, theme) > estimate_height(PARAGRAPH, 400, theme)
    assert estimate.of("") == estimate.line  # never less than one line


def test_a_code_fence_adds_its_chrome(qapp: QApplication) -> None:
    theme = MarkdownTheme.from_palette(qapp.palette(), qapp.font())
    plain = estimate_height("x = 1", 400, theme)
    fenced = estimate_height("```\nx = 1\n```", 400, theme)
    assert fenced - plain >= CODE_CHROME


def test_the_guess_lands_near_the_layout(qapp: QApplication) -> None:
    theme = MarkdownTheme.from_palette(qapp.palette(), qapp.font())
    real = render_markdown(PARAGRAPH, 400, theme).height
    guess = estimate_height(PARAGRAPH, 400, theme)
    assert 0.5 * real <= guess <= 2 * real
