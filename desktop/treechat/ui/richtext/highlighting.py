"""Code highlighted with pygments into QTextCharFormats; lexers and styles are built once and
warmed up off the GUI thread after start. The window asks for code to be shown plain until
that warm-up has finished (`defer_until_warm`): building a lexer (its regular expressions)
would hold its first frame still."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Sequence
from functools import lru_cache
from typing import Any

from PySide6.QtGui import (
    QColor,
    QFont,
    QTextCharFormat,
)

# --- syntax highlighting -----------------------------------------------------------------


_warm = threading.Event()
_deferred = False


def defer_until_warm(deferred: bool = True) -> None:
    """From now on, code is plain until `warm_up_highlighting` has run (False: lexers are
    built when first needed, as by default)."""
    global _deferred
    _deferred = deferred


def is_warm() -> bool:
    """Whether `warm_up_highlighting` has run."""
    return _warm.is_set()


def highlight(code: str, language: str, dark: bool) -> list[tuple[int, int, QTextCharFormat]]:
    """(offset, length, format) runs for `code`; nothing when the language is unknown, or
    (see `defer_until_warm`) before the warm-up has built the lexers."""
    if _deferred and not _warm.is_set():
        return []
    lexer = _lexer(language.lower())
    if lexer is None or not code:
        return []
    from pygments import lex
    from pygments.token import Error

    formats = _formats("github-dark" if dark else "default")
    runs: list[tuple[int, int, QTextCharFormat]] = []
    offset = 0
    for ttype, value in lex(code, lexer):
        length = len(value)
        fmt = None if ttype in Error else formats(ttype)
        if fmt is not None and length:
            runs.append((offset, length, fmt))
        offset += length
    # the lexer sees a final newline the document does not have
    return [(o, min(n, len(code) - o), f) for o, n, f in runs if o < len(code)]


WARM_LANGUAGES = ("python", "bash", "javascript", "json")


def warm_up_highlighting(languages: Sequence[str] = WARM_LANGUAGES) -> None:
    """Load pygments and the commonest lexers (the Python one takes ~80 ms to build), so the
    first code block on screen does not pay for them. Safe off the GUI thread: no Qt here."""
    for language in languages:
        _lexer(language)
    with contextlib.suppress(ImportError):
        from pygments.styles import get_style_by_name

        for name in ("default", "github-dark"):
            get_style_by_name(name)
    _warm.set()


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    if not language:
        return None
    try:
        from pygments.lexers import get_lexer_by_name
        from pygments.util import ClassNotFound
    except ImportError:  # highlighting is a nicety; plain code still renders
        return None
    try:
        return get_lexer_by_name(language, stripnl=False, ensurenl=True)
    except ClassNotFound:
        return None


@lru_cache(maxsize=4)
def _formats(style_name: str) -> Callable[[Any], QTextCharFormat | None]:
    from pygments.styles import get_style_by_name

    style = get_style_by_name(style_name)
    cache: dict[Any, QTextCharFormat | None] = {}

    def lookup(ttype: Any) -> QTextCharFormat | None:
        if ttype in cache:
            return cache[ttype]
        spec = style.style_for_token(ttype)
        fmt: QTextCharFormat | None = None
        if spec.get("color") or spec.get("bold") or spec.get("italic"):
            fmt = QTextCharFormat()
            if spec.get("color"):
                fmt.setForeground(QColor("#" + spec["color"]))
            if spec.get("bold"):
                fmt.setFontWeight(QFont.Weight.Bold)
            if spec.get("italic"):
                fmt.setFontItalic(True)
        cache[ttype] = fmt
        return fmt

    return lookup


