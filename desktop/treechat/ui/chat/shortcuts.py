"""The keyboard's way to every action of a message: the keys on the focused row and the
context menu that lists each action with its shortcut."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeyEvent, QKeySequence

from .delegate import ChatDelegate
from .model import ChatRow, RowKind

PLAIN_KEYS: dict[int, str] = {
    Qt.Key.Key_E: "edit", Qt.Key.Key_F2: "edit", Qt.Key.Key_R: "retry",
    Qt.Key.Key_B: "branch", Qt.Key.Key_P: "pin", Qt.Key.Key_Return: "toggle",
    Qt.Key.Key_Enter: "toggle", Qt.Key.Key_Space: "toggle",
}
ALT_KEYS: dict[int, str] = {Qt.Key.Key_Left: "prev", Qt.Key.Key_Right: "next"}
NO_KEYS: dict[int, str] = {}


def key_action(event: QKeyEvent, row: ChatRow, delegate: ChatDelegate) -> str | None:
    """The action a key press on `row` runs: an action id, "" when the key is taken but
    does nothing, None when it is not a row shortcut."""
    key = event.key()
    mods = event.modifiers()
    if event.matches(QKeySequence.StandardKey.Copy):
        return "copy"
    ctrl_shift = Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier
    if key == Qt.Key.Key_C and (mods & ctrl_shift) == ctrl_shift:
        return "read"
    alt = bool(mods & Qt.KeyboardModifier.AltModifier)
    plain = not (mods & ~Qt.KeyboardModifier.KeypadModifier)
    mapping = PLAIN_KEYS if plain else ALT_KEYS if alt else NO_KEYS
    action = mapping.get(key)
    if action is None:
        return None
    if action == "toggle" and row.kind not in (RowKind.TOOL, RowKind.SYSTEM):
        if delegate.button(row, "more") is not None:
            return "more"
        if row.kind == RowKind.ERROR:
            return next((b.id for b in delegate.layout(row).buttons
                         if b.id.startswith("error:")), "")
        return None
    return action


def menu_actions(row: ChatRow, delegate: ChatDelegate) -> list[tuple[str, str, str]]:
    """(action id, label, shortcut hint) for the row's context menu."""
    items: list[tuple[str, str, str]] = [("copy", "Copy", "Ctrl+C")]
    if delegate.action_enabled(row, "read"):
        items.append(("read", "Open in a window…", "Ctrl+Shift+C"))
    body = delegate.layout(row).body
    if body is not None:
        for i, _block in enumerate(body.code_blocks):
            items.append((f"code:{i}", f"Copy code block {i + 1}", ""))
    if row.kind == RowKind.USER:
        items.append(("edit", "Edit…", "E"))
    if delegate.button(row, "retry") is not None:
        items.append(("retry", "Retry", "R"))
    if row.node_id and row.kind in (RowKind.USER, RowKind.ASSISTANT):
        items.append(("branch", "Branch into a new chat", "B"))
        items.append(("pin", "Unpin" if row.pinned else "Pin", "P"))
    if row.has_versions:
        items.append(("prev", "Previous version", "Alt+Left"))
        items.append(("next", "Next version", "Alt+Right"))
    if row.kind in (RowKind.TOOL, RowKind.SYSTEM):
        items.append(("toggle", "Hide details" if row.expanded else "Show details",
                      "Enter"))
    for b in delegate.layout(row).buttons:
        if b.id.startswith("error:"):
            items.append((b.id, b.label, ""))
    return items
