"""Item data roles of the session list, shared by its model, delegate and widget."""

from __future__ import annotations

from PySide6.QtCore import Qt

KIND_ROLE = Qt.ItemDataRole.UserRole + 1
SESSION_ID_ROLE = Qt.ItemDataRole.UserRole + 2
SNIPPET_ROLE = Qt.ItemDataRole.UserRole + 3
FORKED_ROLE = Qt.ItemDataRole.UserRole + 4
UPDATED_ROLE = Qt.ItemDataRole.UserRole + 5
RUNNING_ROLE = Qt.ItemDataRole.UserRole + 6
ACTIVITY_ROLE = Qt.ItemDataRole.UserRole + 7
"""What a chat's turn is doing in words ("queued · next", "replying…"), "" when idle."""
PROJECT_ID_ROLE = Qt.ItemDataRole.UserRole + 8
"""A project header's project id, or the project a chat's row sits under ("" for none)."""
COLLAPSED_ROLE = Qt.ItemDataRole.UserRole + 9
"""A project header whose chats are folded away."""
