"""The window's preferences kept in the store: the default model, the workspace, when the
context is compacted, and the text typed but not sent in each chat. Read and written on
the store's worker; applying them updates the services that use them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..store.database import Store
from ..store.repository import Repository
from .context import ContextEngine

if TYPE_CHECKING:
    from .models.catalog import ModelCatalog
    from .turns.chat_service import ChatService

SETTINGS_DEFAULT_MODEL = "default_model"
SETTINGS_WORKSPACE = "workspace"
SETTINGS_INSTRUCTIONS = "global_instructions"
# Who summarizes folded history: "" offline, "session" the session's model, or a model id.
SETTINGS_SUMMARIZER = "context.summarizer"
SETTINGS_SUMMARIZE = "compaction.summarize_trigger"
SETTINGS_EMERGENCY = "compaction.emergency_trigger"
SETTINGS_COMPOSER_DRAFTS = "composer.drafts"


@dataclass(frozen=True, slots=True)
class ChatPreferences:
    default_model: str | None
    workspace: str | None
    summarize_trigger: float  # share of the history budget (0..1)
    emergency_trigger: float


def apply_compaction_settings(engine: ContextEngine, summarize: float, emergency: float) -> None:
    """The engine reads its thresholds from its config; swap in one with the user's."""
    rules = replace(
        engine.config.rules, summarize_trigger=summarize, emergency_trigger=emergency
    )
    engine.config = replace(engine.config, rules=rules)


class Preferences:
    def __init__(self, store: Store, engine: ContextEngine, chat: ChatService,
                 models: ModelCatalog) -> None:
        self._store = store
        self._engine = engine
        self._chat = chat
        self._models = models

    def current(self) -> ChatPreferences:
        """What is in effect now (the default model as configured, maybe None)."""
        rules = self._engine.config.rules
        workspace = self._chat.config.workspace
        return ChatPreferences(
            default_model=self._models.default_model or None,
            workspace=str(workspace) if workspace else None,
            summarize_trigger=rules.summarize_trigger,
            emergency_trigger=rules.emergency_trigger,
        )

    async def load_compaction(self) -> None:
        """Apply the thresholds saved in the store (if any) to the engine."""
        saved = await self._store.run(lambda r: (
            r.get_setting(SETTINGS_SUMMARIZE), r.get_setting(SETTINGS_EMERGENCY)
        ))
        rules = self._engine.config.rules
        summarize = (float(saved[0]) if isinstance(saved[0], int | float)
                     else rules.summarize_trigger)
        emergency = (float(saved[1]) if isinstance(saved[1], int | float)
                     else rules.emergency_trigger)
        if (summarize, emergency) != (rules.summarize_trigger, rules.emergency_trigger):
            apply_compaction_settings(self._engine, summarize, emergency)

    def apply(self, prefs: ChatPreferences) -> None:
        """Put `prefs` in effect for the services (the next turn runs under them)."""
        self._models.default_model = prefs.default_model
        self._chat.config.workspace = Path(prefs.workspace) if prefs.workspace else None
        apply_compaction_settings(self._engine, prefs.summarize_trigger,
                                  prefs.emergency_trigger)

    async def persist(self, prefs: ChatPreferences) -> None:
        """Keep `prefs` in the store for the next start."""

        def save(repo: Repository) -> None:
            repo.set_setting(SETTINGS_DEFAULT_MODEL, prefs.default_model)
            repo.set_setting(SETTINGS_WORKSPACE, prefs.workspace)
            repo.set_setting(SETTINGS_SUMMARIZE, prefs.summarize_trigger)
            repo.set_setting(SETTINGS_EMERGENCY, prefs.emergency_trigger)

        await self._store.run(save)

    async def save_summarizer(self, summarizer: str) -> None:
        """Keep who summarizes folded history for the next start ("" offline, "session" the
        session's model, or a model id)."""
        await self._store.run(lambda repo: repo.set_setting(SETTINGS_SUMMARIZER, summarizer))

    async def load_drafts(self) -> dict[str, str]:
        """Unsent text by session id ("" for a new chat), as the last run left it."""
        saved = await self._store.run(lambda r: r.get_setting(SETTINGS_COMPOSER_DRAFTS, {}))
        if not isinstance(saved, dict):
            return {}
        return {str(k): str(v) for k, v in saved.items()}

    async def save_drafts(self, drafts: Mapping[str, str]) -> None:
        kept = {k: v for k, v in drafts.items() if v.strip()}
        await self._store.run(lambda r: r.set_setting(SETTINGS_COMPOSER_DRAFTS, kept))
