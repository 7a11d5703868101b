"""The services built from a data directory: what the store remembers becomes their
settings, a reply cut off by a crash is recovered before anything runs, one clock is
handed to every service, and what the window is handed holds no store: the services bound
to it do its store work."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from tests.support.clock import FakeClock

from treechat.core.model import Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import (
    SETTINGS_DEFAULT_MODEL,
    SETTINGS_INSTRUCTIONS,
    SETTINGS_WORKSPACE,
    OpenServices,
    Services,
    build_services,
)
from treechat.store.database import Store, default_store_path
from treechat.store.repository import Draft


def offline_keys() -> KeyStore:
    return KeyStore(environ={})


@pytest.mark.asyncio
async def test_what_the_store_remembers_becomes_the_services_settings(tmp_path: Path) -> None:
    store = Store.open(default_store_path(tmp_path))
    store.call(lambda r: r.set_setting(SETTINGS_DEFAULT_MODEL, "anthropic/claude-sonnet-4-5"))
    store.call(lambda r: r.set_setting(SETTINGS_WORKSPACE, str(tmp_path / "project")))
    store.call(lambda r: r.set_setting(SETTINGS_INSTRUCTIONS, "Answer in French."))
    store.close()
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              keys=offline_keys())
    try:
        assert services.models.default_model == "anthropic/claude-sonnet-4-5"
        assert services.chat.config.workspace == tmp_path / "project"
        assert services.chat.config.global_instructions == "Answer in French."
        assert services.local_servers is None
    finally:
        await services.close()
        services.close_store()


@pytest.mark.asyncio
async def test_a_crashed_reply_is_recovered_on_the_clock_handed_to_every_service(
    tmp_path: Path,
) -> None:
    store = Store.open(default_store_path(tmp_path))
    store.call(lambda r: r.create_session(Session("s1", "Crashed", None, "m", 1.0)))
    store.call(lambda r: r.write_draft(Draft("d1", "s1", None, "openai/x", "half a", 1.0, 2.0, {})))
    store.close()
    clock = FakeClock.at_local(2027, 1, 1, 0, 0, 5)
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              keys=offline_keys(), clock=clock)
    try:
        view = await services.chat.sessions.view("s1")
        (reply,) = view.path
        assert reply.output == "half a" and reply.interrupted
        assert view.session.updated_at == clock.now()
        assert services.clock is clock
        assert services.chat.clock is clock and services.chat.sessions.clock is clock
        assert services.connections is not None and services.connections.clock is clock
    finally:
        await services.close()
        services.close_store()


@pytest.mark.asyncio
async def test_a_store_given_open_is_used_as_it_is(tmp_path: Path) -> None:
    store = Store.open(tmp_path / "elsewhere.duckdb")
    store.call(lambda r: r.create_session(Session("s1", "Mine", None, "m", 1.0)))
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              keys=offline_keys(), store=store)
    try:
        assert services.store is store
        assert [s.title for s in await services.chat.sessions.list()] == ["Mine"]
        assert not default_store_path(tmp_path).exists()
    finally:
        await services.close()
        services.close_store()


@pytest.mark.asyncio
async def test_the_windows_services_hold_no_store_and_their_facades_work_on_it(
    tmp_path: Path,
) -> None:
    assert "store" not in {f.name for f in dataclasses.fields(Services)}
    assert not hasattr(Services, "store")
    store = Store.open(tmp_path / "elsewhere.duckdb")
    store.call(lambda r: r.create_session(Session("s1", "Mine", None, "m", 1.0)))
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              keys=offline_keys(), store=store, clock=FakeClock())
    try:
        assert isinstance(services, OpenServices) and services.store is store
        assert services.data_folder == tmp_path  # where the store lives, shown by Help
        made = await services.backups.create("manual")
        assert [b.path for b in await services.backups.list()] == [made.path]
        assert services.store_health.damage_message() is None
        assert await services.command_replies.adopt() == ()  # nothing journaled
        await services.preferences.save_summarizer("session")
        assert store.call(lambda r: r.get_setting("context.summarizer")) == "session"
        assert await services.imports.titles(("s1",)) == {"s1": "Mine"}
    finally:
        await services.close()
        services.close_store()
