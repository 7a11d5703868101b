"""Words a screen reader says without the focus moving: a finished reply, read out politely
(after what it is saying now), through Qt's accessibility announcement."""

from __future__ import annotations

from PySide6.QtGui import QAccessible, QAccessibleAnnouncementEvent
from PySide6.QtWidgets import QWidget

ANNOUNCED_CHARS = 300  # the start of a long reply; the rest is read from the message list


def announce(widget: QWidget, text: str) -> None:
    """Have assistive technology say `text`, as coming from `widget`."""
    words = " ".join(text.split())
    if not words or not QAccessible.isActive():
        return
    if len(words) > ANNOUNCED_CHARS:
        words = words[:ANNOUNCED_CHARS].rsplit(" ", 1)[0] + "…"
    event = QAccessibleAnnouncementEvent(widget, words)
    event.setPoliteness(QAccessible.AnnouncementPoliteness.Polite)
    QAccessible.updateAccessibility(event)


def reply_announcement(model_label: str, text: str, stopped: bool = False) -> str:
    who = model_label or "The model"
    if stopped:
        return f"Reply from {who} stopped. {text}" if text.strip() else f"Reply from {who} stopped."
    return f"Reply from {who} finished. {text}"
