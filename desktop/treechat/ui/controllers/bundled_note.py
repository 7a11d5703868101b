"""Once, after the first reply from the bundled model: what it is (a tiny offline model for
trying Treechat) and how to connect a better one."""

from __future__ import annotations

from PySide6.QtCore import QSettings

from ...services.models.catalog import BUNDLED_ID, ModelCatalog
from ..shell.error_banner import ErrorBanner
from .wiring import ShownChat

SHOWN_KEY = "notes/bundled_model_shown"
TITLE = "This is a tiny offline model for trying Treechat"
MESSAGE = (
    "It runs on this computer without a network, so branching, the graph and merging can be "
    "tried right away, but its answers are short and often wrong. For real work, connect "
    "LM Studio, Ollama or a hosted key in Settings, or get a larger model from File → Local "
    "models."
)


class BundledModelNote:
    """`turn_finished` is to be called with the session of each finished reply."""

    def __init__(self, chat: ShownChat, *, catalog: ModelCatalog, banner: ErrorBanner,
                 prefs: QSettings | None) -> None:
        self._chat = chat
        self._catalog = catalog
        self._banner = banner
        self._prefs = prefs
        self.shown = bool(prefs is not None and prefs.value(SHOWN_KEY, False, type=bool))

    def is_bundled(self, model: str) -> bool:
        bundled = self._catalog.bundled
        return model == BUNDLED_ID or (bundled is not None and model == bundled.model_id)

    def turn_finished(self, session_id: str) -> None:
        view = self._chat.current_view
        if self.shown or view is None or view.session.id != session_id:
            return
        if not self.is_bundled(view.session.model):
            return
        if not self._banner.isHidden():
            return  # a failure or another notice says something more urgent
        self.shown = True
        if self._prefs is not None:
            self._prefs.setValue(SHOWN_KEY, True)
        self._banner.show_notice(TITLE, MESSAGE, actions=("settings",))
