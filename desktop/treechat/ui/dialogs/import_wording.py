"""What the import dialog says: the formats it reads, sizes and counts as people read them,
and a finished import's headline."""

from __future__ import annotations

from ...core.imports import FORMAT_NAMES
from ...services.transfer.importing import ImportSummary

# How the intro names the formats the importer reads, where it says more than the name
# a finished import reports ("Claude.ai").
_INTRO_NAMES = {"claude": "Claude", "aistudio": "Google AI Studio (Gemini)",
                "treechat": "Treechat JSON"}


def _formats_text() -> str:
    """Every format `FORMAT_NAMES` lists, Treechat's own last: "ChatGPT, Claude, … or
    Treechat JSON"."""
    keys = sorted(FORMAT_NAMES, key=lambda k: k == "treechat")
    names = [_INTRO_NAMES.get(k, FORMAT_NAMES[k]) for k in keys]
    return ", ".join(names[:-1]) + " or " + names[-1]


INTRO = (
    f"Bring your chats from {_formats_text()}, every branch kept. Choose the file of a "
    "data export (conversations.json for ChatGPT and Claude), or the zip it came in."
)


def count_of(n: int, word: str, plural: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (plural or word + 's')}"


def size_text(n: int) -> str:
    """Bytes as people read them: 512 bytes, 3.4 MB, 1.2 GB."""
    if n < 1024:
        return count_of(n, "byte")
    value = float(n)
    for unit in ("KB", "MB", "GB"):
        value /= 1024
        if value < 1024 or unit == "GB":
            return f"{value:,.1f} {unit}"
    raise AssertionError("unreachable")


def summary_text(summary: ImportSummary) -> tuple[str, str]:
    """The headline of a finished (or cancelled) import and the line under it."""
    name = FORMAT_NAMES.get(summary.source_format, summary.source_format)
    imported = len(summary.session_ids)
    conversations = count_of(summary.conversations, "conversation")
    if summary.cancelled:
        return ("Import cancelled",
                f"{imported} of {conversations} imported completely; the rest were not "
                "touched. Import the file again to add them.")
    if summary.nodes or summary.sessions:
        return (f"Imported {count_of(imported, 'chat')}",
                f"{conversations} read from the {name} export.")
    return ("Nothing new to import",
            f"All {conversations} in this export were imported before.")
