"""What is under the pointer on a chat row (a button, a code block's copy button, a link) and
whether it can be used right now: the interaction state the delegate and the painter share
(hover, keyboard focus, a turn running, copied marks, a rate limit's wait, selected text)."""

from __future__ import annotations

import time
from collections.abc import Callable

from PySide6.QtCore import QPointF

from .model import ChatRow, RowKind
from .row_layout import Button, RowLayout
from .selection import SelectedSpans

BUSY_LOCKED = ("edit", "retry")
READABLE = (RowKind.USER, RowKind.ASSISTANT, RowKind.STREAM, RowKind.TOOL, RowKind.SYSTEM)
COPIED_FOR_S = 1.6


def hit(layout: RowLayout, pos: QPointF) -> str:
    """The action under `pos` (row coordinates): a button id, `code:<n>`, `link:<url>`."""
    for b in layout.buttons:
        if b.id != "toggle" and b.rect.contains(pos) and b.id != "version":
            return b.id
    body = layout.body
    if body is not None:
        local = pos - layout.body_origin
        index = body.copy_button_at(local)
        if index is not None:
            return f"code:{index}"
        anchor = body.anchor_at(local)
        if anchor:
            return f"link:{anchor}"
    for b in layout.buttons:
        if b.id == "toggle" and b.rect.contains(pos):
            return b.id
    return ""


def button_of(layout: RowLayout, action: str) -> Button | None:
    return next((b for b in layout.buttons if b.id == action), None)


class RowInteraction:
    """The state of the pointer and keyboard over the list, and of the turn, that decides
    what a row's buttons look like and whether they answer. `monotonic` is the clock the
    copied marks and a rate limit's countdown run on."""

    def __init__(self, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.monotonic = monotonic
        self.busy = False
        self.typing_phase = 0
        self.wait_until = 0.0  # a rate-limited turn's retry unlocks at this monotonic time
        self.hover: tuple[str, str] | None = None
        self.hover_row: str | None = None
        self.keyboard_focus = False  # the focus ring shows once the keyboard is used
        self.pressed: tuple[str, str] | None = None
        self.selected = SelectedSpans()  # what is selected, as the painter draws it
        self.over_text = False  # the pointer is over selectable text: the I-beam shows
        self._copied: dict[tuple[str, str], float] = {}

    def selected_span(self, key: str, part: str) -> tuple[int, int] | None:
        """The characters selected in part `part` of row `key`, if any."""
        return self.selected.span(key, part)

    def set_hover(self, row_key: str | None, action: str = "") -> bool:
        """Hover `action` of row `row_key`; False when that was already so."""
        hover = (row_key, action) if row_key is not None and action else None
        if hover == self.hover and row_key == self.hover_row:
            return False
        self.hover = hover
        self.hover_row = row_key
        return True

    def button_enabled(self, button: Button) -> bool:
        if not button.enabled:
            return False
        if button.id == "error:wait" and self.monotonic() < self.wait_until:
            return False
        return not (self.busy and button.id in BUSY_LOCKED)

    def action_enabled(self, row: ChatRow, layout: RowLayout, action: str) -> bool:
        if action.startswith(("code:", "link:")):
            return True
        if action == "read":
            return row.kind in READABLE
        b = button_of(layout, action)
        return b is not None and self.button_enabled(b)

    def wait_left(self) -> int:
        """Whole seconds until a rate-limited retry unlocks (rounded up)."""
        return int(self.wait_until - self.monotonic()) + 1

    def tooltip(self, layout: RowLayout, action: str) -> str:
        if action.startswith("code:"):
            return "Copy code"
        if action.startswith("link:"):
            return action[5:]
        b = button_of(layout, action) if action else None
        if b is None:
            return ""
        if self.busy and action in BUSY_LOCKED:
            return b.tooltip + " — unavailable while a reply is running"
        return b.tooltip

    # --- copied marks --------------------------------------------------------------------

    def mark_copied(self, key: str, action: str) -> None:
        self._copied[(key, action)] = self.monotonic() + COPIED_FOR_S

    def is_copied(self, key: str, action: str) -> bool:
        deadline = self._copied.get((key, action))
        return deadline is not None and deadline > self.monotonic()

    def copied_code(self, key: str) -> int | None:
        """The code block of row `key` whose copy button shows "Copied", if any."""
        now = self.monotonic()
        for (k, action), deadline in self._copied.items():
            if k == key and action.startswith("code:") and deadline > now:
                return int(action.split(":", 1)[1])
        return None
