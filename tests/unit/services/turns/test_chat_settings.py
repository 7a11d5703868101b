"""Chat settings, presets (shipped and the user's own) and list marks through the service, on
a real DuckDB file and the presets shipped under resources/presets/."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from treechat import paths
from treechat.core.chat_settings import ChatParameters, Preset, SettingsError
from treechat.services.turns.chat_settings import ChatSettingsService, builtin_presets
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store


class Ticking:
    """A clock that moves one second each time it is read."""

    def __init__(self) -> None:
        self.t = 1000.0

    def now(self) -> float:
        self.t += 1.0
        return self.t

    def monotonic(self) -> float:
        return self.t

    async def sleep(self, seconds: float) -> None:
        self.t += seconds


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    opened = Store.open(tmp_path / "s.duckdb")
    yield opened
    opened.close()


@pytest.fixture
def service(store: Store) -> ChatSettingsService:
    return ChatSettingsService(store, clock=Ticking())


def test_the_shipped_presets_are_valid_and_named_once() -> None:
    shipped = builtin_presets()
    assert len(shipped) >= 4
    assert len({p.name for p in shipped}) == len(shipped)
    assert all(p.builtin and p.system_prompt for p in shipped)
    files = sorted(paths.resource("presets").glob("*.json"))
    assert len(files) == len(shipped)


def test_a_broken_shipped_preset_is_skipped_not_fatal(tmp_path: Path) -> None:
    (tmp_path / "good.json").write_text(json.dumps({"name": "Good"}), "utf-8")
    (tmp_path / "bad.json").write_text("{broken", "utf-8")
    assert [p.name for p in builtin_presets(tmp_path)] == ["Good"]


@pytest.mark.asyncio
async def test_single_parameters_change_and_clear_and_bad_values_write_nothing(
    store: Store, service: ChatSettingsService
) -> None:
    session = await SessionService(store).create()
    await service.update(session.id, temperature=0.5, max_tokens=100)
    second = await service.update(session.id, temperature=None, reasoning_effort="low")
    assert second.parameters == ChatParameters(max_tokens=100, reasoning_effort="low")
    with pytest.raises(SettingsError):
        await service.update(session.id, temperature=7.0)
    with pytest.raises(SettingsError):
        await service.update(session.id, colour="red")
    assert (await service.current(session.id)).revision == 2
    with pytest.raises(LookupError):
        await service.update("no-such-chat", temperature=0.1)


@pytest.mark.asyncio
async def test_a_reply_without_a_named_revision_finds_it_by_time(
    store: Store, service: ChatSettingsService
) -> None:
    sessions = SessionService(store, clock=Ticking())
    chat = await sessions.create()
    first = await service.update(chat.id, instructions="Old rules.")
    service.clock = Ticking()
    service.clock.t = 5000.0  # type: ignore[attr-defined]
    await service.update(chat.id, instructions="New rules.")
    early = await sessions.append_message(chat.id, "written at 1002")  # between the two
    assert early.created_at < 5000
    ran = await service.instructions_for(chat.id, early.id)
    assert ran.id == first.id and ran.instructions == "Old rules."


@pytest.mark.asyncio
async def test_presets_merge_shipped_and_own_and_round_trip_as_json(
    store: Store, service: ChatSettingsService
) -> None:
    shipped = service.builtin()
    name = shipped[0].name
    mine = Preset(name, system_prompt="My own take.", model="openai/gpt-4o")
    await service.save_preset(mine)
    await service.save_preset(Preset("Zed", system_prompt="z"))
    listed = {p.name: p for p in await service.presets()}
    assert listed[name].system_prompt == "My own take." and not listed[name].builtin
    assert "Zed" in listed and len(listed) == len(shipped) + 1
    text = await service.export_presets([name, "Zed"])
    assert await service.delete_preset("Zed")
    assert await service.delete_preset(name)
    assert (await service.preset(name)).builtin  # the shipped one shows again
    imported = await service.import_presets(text)
    assert [p.name for p in imported] == [name, "Zed"]
    assert (await service.preset("zed")).system_prompt == "z"
    with pytest.raises(SettingsError):
        await service.import_presets('[{"name": "ok"}, {"name": ""}]')
    assert {p.name for p in await service.presets()} == set(listed)
    with pytest.raises(LookupError):
        await service.preset("nothing like it")


@pytest.mark.asyncio
async def test_new_chat_from_a_preset_starts_with_its_model_instructions_and_parameters(
    store: Store, service: ChatSettingsService
) -> None:
    preset = Preset("Careful", system_prompt="Check twice.", model="openai/gpt-4o",
                    parameters=ChatParameters(temperature=0.1))
    await service.save_preset(preset)
    session, settings = await service.new_chat_from_preset("Careful", SessionService(store))
    assert session.model == "openai/gpt-4o"
    assert (settings.instructions, settings.parameters, settings.preset, settings.revision) == (
        "Check twice.", ChatParameters(temperature=0.1), "Careful", 1)
    assert (await service.current(session.id)) == settings


@pytest.mark.asyncio
async def test_pinned_chats_list_first_and_favourites_filter(
    store: Store, service: ChatSettingsService
) -> None:
    sessions = SessionService(store, clock=Ticking())
    a = await sessions.create("a")
    b = await sessions.create("b")
    c = await sessions.create("c")
    assert [r.session.id for r in await service.listed()] == [c.id, b.id, a.id]
    await service.set_pinned(a.id, True)
    await service.set_favourite(b.id, True)
    listed = await service.listed()
    assert [r.session.id for r in listed] == [a.id, c.id, b.id]
    assert listed[0].pinned and listed[2].favourite
    assert [r.session.id for r in await service.listed(favourites_only=True)] == [b.id]
    await service.set_pinned(a.id, False)
    assert [r.session.id for r in await service.listed()] == [c.id, b.id, a.id]


@pytest.mark.asyncio
async def test_global_instructions_are_stored_and_reported(
    store: Store, tmp_path: Path
) -> None:
    seen: list[str] = []
    service = ChatSettingsService(store, on_global_instructions=seen.append)
    await service.set_global_instructions("Use metric units.")
    assert await service.global_instructions() == "Use metric units."
    assert seen == ["Use metric units."]
