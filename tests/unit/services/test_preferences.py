"""The window's preferences on a real store: saved thresholds, default model and workspace
come back in a new run and apply to the engine; unsent text is kept per chat, empty text is
not kept, and a damaged entry reads as none."""

from __future__ import annotations

from pathlib import Path

import pytest

from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import Services, build_services
from treechat.services.preferences import (
    SETTINGS_COMPOSER_DRAFTS,
    ChatPreferences,
)


def services_in(data_dir: Path) -> Services:
    return build_services(data_dir, bundled=False, detect_local_servers=False,
                          keys=KeyStore(environ={}))


@pytest.mark.asyncio
async def test_saved_preferences_apply_now_and_in_the_next_run(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    try:
        prefs = services.preferences
        wanted = ChatPreferences(default_model="openai/gpt-4o", workspace=str(tmp_path),
                                 summarize_trigger=0.6, emergency_trigger=0.9)
        prefs.apply(wanted)
        assert prefs.current() == wanted
        assert services.engine.config.rules.summarize_trigger == 0.6
        assert services.chat.config.workspace == tmp_path
        await prefs.persist(wanted)
    finally:
        await services.close()
        services.close_store()

    services = services_in(tmp_path)
    try:
        prefs = services.preferences
        before = services.engine.config.rules
        assert (before.summarize_trigger, before.emergency_trigger) != (0.6, 0.9)
        await prefs.load_compaction()
        assert prefs.current() == ChatPreferences("openai/gpt-4o", str(tmp_path), 0.6, 0.9)
    finally:
        await services.close()
        services.close_store()


@pytest.mark.asyncio
async def test_unsent_text_is_kept_per_chat_and_blank_text_is_dropped(tmp_path: Path) -> None:
    services = services_in(tmp_path)
    try:
        prefs = services.preferences
        assert await prefs.load_drafts() == {}
        await prefs.save_drafts({"a": "half a thought", "b": "   ", "": "new chat text"})
        assert await prefs.load_drafts() == {"a": "half a thought", "": "new chat text"}
        await services.store.run(lambda r: r.set_setting(SETTINGS_COMPOSER_DRAFTS, "junk"))
        assert await prefs.load_drafts() == {}
    finally:
        await services.close()
        services.close_store()
