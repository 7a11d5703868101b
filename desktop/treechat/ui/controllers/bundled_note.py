"""Once, after the first reply from the bundled model: what it is (a tiny offline model for
trying Treechat) and how to connect a better one."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...services.models.catalog import BUNDLED_ID

if TYPE_CHECKING:
    from .conversation import ConversationController

SHOWN_KEY = "notes/bundled_model_shown"
TITLE = "This is a tiny offline model for trying Treechat"
MESSAGE = (
    "It runs on this computer without a network, so branching, the graph and merging can be "
    "tried right away, but its answers are short and often wrong. For real work, connect "
    "LM Studio, Ollama or a hosted key in Settings, or get a larger model from File → Local "
    "models."
)


class BundledModelNote:
    def __init__(self, conversation: ConversationController) -> None:
        self._c = conversation
        prefs = conversation.prefs
        self.shown = bool(prefs is not None and prefs.value(SHOWN_KEY, False, type=bool))
        conversation.turnFinished.connect(self._turn_finished)

    def is_bundled(self, model: str) -> bool:
        bundled = self._c.services.models.bundled
        return model == BUNDLED_ID or (bundled is not None and model == bundled.model_id)

    def _turn_finished(self, session_id: str) -> None:
        c = self._c
        view = c.current_view
        if self.shown or view is None or view.session.id != session_id:
            return
        if not self.is_bundled(view.session.model):
            return
        if not c.parts.banner.isHidden():
            return  # a failure or another notice says something more urgent
        self.shown = True
        if c.prefs is not None:
            c.prefs.setValue(SHOWN_KEY, True)
        c.parts.banner.show_notice(TITLE, MESSAGE, actions=("settings",))
