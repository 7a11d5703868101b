"""Quick height estimates of text at a width, from font metrics alone: what a row not laid
out yet is assumed to take."""

from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtGui import (
    QFontMetricsF,
)

from .rendered import CODE_HEADER, CODE_PAD_Y
from .theme import LINE_HEIGHT, MarkdownTheme


@dataclass(frozen=True, slots=True)
class _Metrics:
    line: float
    char: float
    mono_line: float
    mono_char: float


_METRICS: dict[str, _Metrics] = {}


def _metrics(theme: MarkdownTheme) -> _Metrics:
    found = _METRICS.get(theme.key)
    if found is None:
        body, mono = QFontMetricsF(theme.font), QFontMetricsF(theme.mono)
        found = _Metrics(body.lineSpacing() * LINE_HEIGHT, body.averageCharWidth() or 7.0,
                         mono.lineSpacing(), mono.averageCharWidth() or 7.0)
        _METRICS[theme.key] = found
    return found


CODE_CHROME = CODE_HEADER + 2 * CODE_PAD_Y + 14  # what a fenced block adds to its lines


class HeightEstimate:
    """A quick guess of the laid-out height of texts at one width, for rows not measured
    yet: a few string counts, no layout, so thousands of rows are estimated in a few
    milliseconds (the set-up is done once for all of them)."""

    __slots__ = ("line", "per_line", "prose")

    def __init__(self, width: float, theme: MarkdownTheme, *, mono: bool = False) -> None:
        m = _metrics(theme)
        line, char = (m.mono_line, m.mono_char) if mono else (m.line, m.char)
        self.line = line
        self.per_line = max(8.0, width / char)
        self.prose = not mono

    def of(self, text: str) -> float:
        newlines = text.count("\n")
        # each source line wraps into len/per_line rows, plus on average half a row of ragging
        height = (len(text) / self.per_line + 0.5 * (newlines + 1)) * self.line
        if self.prose:
            height += text.count("\n\n") * 8.0
            height += (text.count("```") + text.count("~~~")) // 2 * CODE_CHROME
        return max(self.line, height)


def estimate_height(text: str, width: float, theme: MarkdownTheme, *, mono: bool = False) -> float:
    """`HeightEstimate` of one text."""
    return HeightEstimate(width, theme, mono=mono).of(text)

