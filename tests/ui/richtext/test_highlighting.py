"""Code is coloured by its language (in the light and the dark scheme alike), an unknown
language is left plain, and no run reaches past the code; the window may have code plain until
the lexers have loaded off its thread."""

from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QApplication

from treechat.ui.richtext import highlighting
from treechat.ui.richtext.highlighting import highlight, warm_up_highlighting

CODE = "def area(r):\n    return 3.14 * r * r\n"


def test_known_code_is_coloured_within_its_text(qapp: QApplication) -> None:
    runs = highlight(CODE, "Python", dark=False)
    assert runs
    assert all(offset >= 0 and offset + length <= len(CODE) for offset, length, _f in runs)
    keyword = next(f for offset, length, f in runs if CODE[offset:offset + length] == "def")
    dark_keyword = next(f for offset, length, f in highlight(CODE, "python", dark=True)
                        if CODE[offset:offset + length] == "def")
    assert keyword.foreground().color() != dark_keyword.foreground().color()


def test_an_unknown_language_or_no_code_stays_plain(qapp: QApplication) -> None:
    assert highlight(CODE, "no-such-language", dark=False) == []
    assert highlight("", "python", dark=False) == []
    assert highlight(CODE, "", dark=False) == []


def test_warming_up_needs_no_qt_and_leaves_highlighting_as_it_was(qapp: QApplication) -> None:
    before = [(o, n) for o, n, _f in highlight(CODE, "python", dark=False)]
    warm_up_highlighting(("python", "no-such-language"))
    assert [(o, n) for o, n, _f in highlight(CODE, "python", dark=False)] == before


def test_the_window_can_have_code_plain_until_the_lexers_have_loaded(
    qapp: QApplication, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(highlighting, "_warm", threading.Event())  # as in a fresh process
    highlighting.defer_until_warm()
    try:
        assert highlight(CODE, "python", dark=False) == []  # no lexer built for it meanwhile
        warm_up_highlighting(("python",))
        assert highlighting.is_warm()
        assert highlight(CODE, "python", dark=False)  # coloured from then on
    finally:
        highlighting.defer_until_warm(False)
