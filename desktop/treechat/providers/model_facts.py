"""litellm's own table of model facts (windows, reply limits, prices), read from the file
litellm ships, without importing litellm: the import costs seconds and ~200 MB, and a window
that only shows a chat and its ring needs neither. Once litellm is loaded it answers what
this table does not list."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any

TABLE = "model_prices_and_context_window_backup.json"
# what the facts callers read; the rest of each entry is left in the file
FIELDS = ("max_input_tokens", "max_tokens", "max_output_tokens", "input_cost_per_token",
          "output_cost_per_token", "litellm_provider")

_lock = threading.Lock()
_table: dict[str, dict[str, Any]] | None = None
_read = False


def table_path() -> Path | None:
    """The table inside the installed litellm package, found without importing it."""
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / TABLE
    return path if path.is_file() else None


def read_table(path: Path) -> dict[str, dict[str, Any]]:
    """Each model's facts. Streamed (ijson) rather than parsed whole, so the 3.5 MB file
    never stands in memory as one tree of every field of every model."""
    import ijson

    out: dict[str, dict[str, Any]] = {}
    with path.open("rb") as f:
        for key, value in ijson.kvitems(f, "", use_float=True):
            if isinstance(value, dict):
                out[key] = {k: value[k] for k in FIELDS if value.get(k) is not None}
    return out


def _loaded() -> dict[str, dict[str, Any]] | None:
    global _table, _read
    with _lock:
        if not _read:
            _read = True
            path = table_path()
            try:
                _table = read_table(path) if path is not None else None
            except (OSError, ValueError):  # unreadable: litellm itself will answer
                _table = None
        return _table


def lookup(model: str) -> tuple[bool, dict[str, Any] | None]:
    """(whether the table could be read, the facts it lists for `model` or None). A model
    id is found as litellm's table names it (`gpt-4o`, `azure/gpt-4o`) or, with a provider
    prefix, by its name when the table files it under that provider
    (`openai/gpt-4o` -> `gpt-4o`)."""
    table = _loaded()
    if table is None:
        return False, None
    chosen = model.strip()
    entry = table.get(chosen)
    if entry is None:
        provider, sep, name = chosen.partition("/")
        found = table.get(name) if sep else None
        if found is not None and found.get("litellm_provider") == provider:
            entry = found
    return True, dict(entry) if entry is not None else None
