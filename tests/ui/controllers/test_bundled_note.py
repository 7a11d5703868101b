"""The note after the first reply from the bundled model: once, only for a chat on that
model and on screen, never over a banner that says something more urgent."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from PySide6.QtCore import QSettings
from pytestqt.qtbot import QtBot

from treechat.core import dag
from treechat.core.model import Session
from treechat.providers.keys import KeyStore
from treechat.services.models.catalog import BUNDLED_ID, ModelCatalog
from treechat.services.turns.sessions import SessionView
from treechat.ui.controllers.bundled_note import SHOWN_KEY, TITLE, BundledModelNote
from treechat.ui.shell.error_banner import ErrorBanner


@dataclass
class Shown:
    """The chat on screen, as the note reads it."""

    current_view: SessionView | None = None

    @property
    def current_session_id(self) -> str | None:
        return self.current_view.session.id if self.current_view is not None else None


def view_of(session_id: str, model: str) -> SessionView:
    session = Session(session_id, "A chat", None, model, 1.0, updated_at=1.0)
    return SessionView(session, dag.Graph(()), (), frozenset(), frozenset())


def make(qtbot: QtBot, tmp_path: Path) -> tuple[BundledModelNote, Shown, ErrorBanner,
                                                QSettings]:
    banner = ErrorBanner()
    qtbot.addWidget(banner)
    prefs = QSettings(str(tmp_path / "prefs.ini"), QSettings.Format.IniFormat)
    shown = Shown()
    note = BundledModelNote(shown, catalog=ModelCatalog(keys=KeyStore(environ={})),
                            banner=banner, prefs=prefs)
    return note, shown, banner, prefs


def test_the_note_shows_once_after_a_bundled_reply_on_screen(
    qtbot: QtBot, tmp_path: Path
) -> None:
    note, shown, banner, prefs = make(qtbot, tmp_path)
    shown.current_view = view_of("b1", BUNDLED_ID)
    note.turn_finished("other")  # another chat's reply: not the one on screen
    assert banner.isHidden()
    note.turn_finished("b1")
    assert not banner.isHidden() and banner.title.text() == TITLE
    assert banner.action_keys() == ["settings"]
    assert prefs.value(SHOWN_KEY, False, type=bool)
    banner.dismiss()
    note.turn_finished("b1")
    assert banner.isHidden()  # once
    again, _, _, _ = make(qtbot, tmp_path)  # the next start remembers it
    assert again.shown


def test_no_note_for_another_model_or_over_a_failure(qtbot: QtBot, tmp_path: Path) -> None:
    note, shown, banner, _prefs = make(qtbot, tmp_path)
    shown.current_view = view_of("h1", "openai/gpt-4o")
    note.turn_finished("h1")
    assert banner.isHidden() and not note.shown
    shown.current_view = view_of("b1", BUNDLED_ID)
    banner.show_notice("Something failed", "The server did not answer.")
    note.turn_finished("b1")
    assert banner.title.text() == "Something failed" and not note.shown
    assert not note.is_bundled("openai/gpt-4o") and note.is_bundled(BUNDLED_ID)
