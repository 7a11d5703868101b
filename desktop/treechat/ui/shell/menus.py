"""The window's menu actions: one made with its shortcuts, and the list of every shortcut
the window answers to, for Help."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QMenu, QWidget

from .empty_state import SHORTCUTS_HELP

Shortcut = QKeySequence | QKeySequence.StandardKey | str


def add_action(window: QWidget, menu: QMenu, text: str, shortcuts: tuple[Shortcut, ...] = (),
               slot: Callable[[], object] | None = None) -> QAction:
    """An action in `menu` whose shortcuts work anywhere in `window`."""
    action = QAction(text, window)
    if shortcuts:
        action.setShortcuts([QKeySequence(s) for s in shortcuts])
        action.setShortcutContext(Qt.ShortcutContext.WindowShortcut)
    if slot is not None:
        action.triggered.connect(slot)
    menu.addAction(action)
    window.addAction(action)
    return action


def shortcut_list(window: QWidget) -> list[tuple[str, str]]:
    """Every shortcut `window` answers to (its menus' and the composer's), for Help."""
    from ..dialogs.help import shortcut_rows

    actions = [
        ([k.toString(QKeySequence.SequenceFormat.NativeText) for k in action.shortcuts()],
         action.text().replace("&", "").rstrip("…"))
        for action in window.findChildren(QAction)
    ]
    return shortcut_rows(actions, SHORTCUTS_HELP)
