"""The parts of the window the controllers drive; the window owns and lays them out."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from PySide6.QtWidgets import QDockWidget, QTabWidget, QWidget

from ...services.turns.sessions import SessionView
from ..chat.view import ChatView
from ..composer.composer import Composer
from ..sessions.list import SessionList
from .error_banner import ErrorBanner


@dataclass(frozen=True)
class WindowParts:
    window: QWidget
    sessions: SessionList
    chat: ChatView
    composer: Composer
    banner: ErrorBanner
    dock: QDockWidget  # the inspector: the Graph and Context tabs
    dock_tabs: QTabWidget
    show_view: Callable[[SessionView | None], None]  # header, empty state
    status: Callable[[str], None]
    # the one name of a model ("Connection · model"), for the chat header and reply headers
    set_model_namer: Callable[[Callable[[str], str]], None] = lambda _namer: None
