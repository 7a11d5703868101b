"""A search hit shown in the chat: the message scrolled into view a third of the way down,
made current, and the first place its body holds the searched word selected (unfolded when
it lies below the fold); the selection let go when the search is cleared."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .scrolling import Anchor
from .selection import TextSelection, part_named

if TYPE_CHECKING:
    from .view import ChatView


class SearchHit:
    def __init__(self, chat: ChatView) -> None:
        self._chat = chat
        self._selected: TextSelection | None = None  # what `reveal` selected

    def reveal(self, key: str, needle: str = "") -> bool:
        """Show message `key` with the first place its text holds `needle` (any case)
        selected; False when the message is not on the path shown."""
        chat = self._chat
        index = chat.model.show_from(key)
        if index < 0:
            return False
        chat.selector.clear()
        row = chat.model.row_at(index)
        part = part_named(row, chat.delegate.layout(row), "body")
        found = part.text.document.find(needle) if part is not None and needle else None
        within = 0.0  # how far below the row's top the match is
        if part is not None and found is not None and not found.isNull():
            block = found.block()
            text_layout = block.layout()
            line = text_layout.lineForTextPosition(found.selectionStart() - block.position())
            within = (part.origin.y() + part.text.top + text_layout.position().y()
                      + (line.y() if line.isValid() else 0.0))
            if within > part.origin.y() + part.shown and not row.expanded:
                with chat.scroller.guard():  # the match is below the fold: unfold it
                    chat.model.toggle_expanded(key)
            chat.selector.select(key, "body", found.selectionStart(), found.selectionEnd())
            self._selected = chat.selector.selection
        chat.list.setCurrentIndex(chat.model.index(index))
        chat.scroller.stick = False
        offset = chat.list.viewport().height() // 3 - int(within)
        chat.scroller.settle(Anchor(row=index, offset=offset))
        return True

    def forget(self) -> None:
        """The search was cleared: the match `reveal` selected goes (a selection made since
        by hand stays)."""
        selected, self._selected = self._selected, None
        if selected is not None and self._chat.selector.selection == selected:
            self._chat.selector.clear()
