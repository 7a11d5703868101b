"""Text that can be stored: no lone UTF-16 surrogates.

JSON may escape half of a surrogate pair on its own (`"\\ud800"`), and Python decodes it into
a string that no UTF-8 file or DuckDB column can hold: a server streaming one made `send` end
in a traceback, and an import holding one refused the whole file. Such a half stands for no
character, so it becomes U+FFFD, the replacement character, where text enters (a stream's
pieces) and where it is written (the store)."""

from __future__ import annotations

import re
from typing import Any

REPLACEMENT = "\ufffd"
_LONE = re.compile("[\ud800-\udfff]")


def storable(text: str) -> str:
    """`text` with each lone surrogate replaced (the same object when it holds none)."""
    if text.isascii() or _LONE.search(text) is None:  # isascii reads a flag: no scan
        return text
    return _LONE.sub(REPLACEMENT, text)


def storable_values(value: Any) -> Any:
    """`value` with `storable` applied to every string in it, through lists, tuples and
    dicts (the same object when nothing changed)."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, (list, tuple)):
        items = [storable_values(item) for item in value]
        if all(a is b for a, b in zip(items, value, strict=True)):
            return value
        return type(value)(items) if isinstance(value, tuple) else items
    if isinstance(value, dict):
        pairs = {storable_values(k): storable_values(v) for k, v in value.items()}
        if all(k in value and value[k] is v for k, v in pairs.items()):
            return value
        return pairs
    return value
