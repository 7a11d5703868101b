"""Laid-out documents kept per (row, part, width, theme), least recently used first out, so
painting a scrolled row never lays its text out again."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from .rendered import RenderedText

# --- cache and estimates -----------------------------------------------------------------


class DocumentCache:
    """Least-recently-used laid-out documents keyed by (key, width, theme): a scrolled row
    is painted from here, never re-parsed."""

    def __init__(self, capacity: int = 256) -> None:
        self.capacity = capacity
        self._items: OrderedDict[tuple[Any, ...], RenderedText] = OrderedDict()
        self.misses = 0

    def __len__(self) -> int:
        return len(self._items)

    def get(
        self,
        key: tuple[Any, ...],
        build: Callable[[], RenderedText],
    ) -> RenderedText:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
            return item
        self.misses += 1
        item = build()
        self._items[key] = item
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)
        return item

    def clear(self) -> None:
        self._items.clear()


