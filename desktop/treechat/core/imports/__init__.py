"""Reading other apps' chat exports (and Treechat's own) into conversations ready to store,
and writing a session back out as JSON or Markdown. Pure: no I/O, no clock."""

from .detect import FORMAT_NAMES, decode_json, detect_format, parse_export, unreadable_value
from .model import (
    ImportedConversation,
    ImportedMessage,
    ImportFileError,
    ParsedExport,
    Skipped,
)

__all__ = [
    "FORMAT_NAMES",
    "ImportFileError",
    "ImportedConversation",
    "ImportedMessage",
    "ParsedExport",
    "Skipped",
    "decode_json",
    "detect_format",
    "parse_export",
    "unreadable_value",
]
