"""What a request carries besides the history: the system prompt's layers in order, the
workspace's AGENTS.md, and the provider request built from a prepared context."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.chat_settings import ChatParameters, SessionSettings
from treechat.core.model import Session
from treechat.core.occupancy import build_occupancy
from treechat.core.reply import CONTINUES_KEY
from treechat.services.context import TurnPrep
from treechat.services.models.catalog import Endpoint
from treechat.services.turns.chat_settings import ChatSettingsService
from treechat.services.turns.config import ChatConfig
from treechat.services.turns.request import CONTINUE_PROMPT, IDENTITY, RequestBuilder
from treechat.store.database import Store

ENDPOINT = Endpoint("openai/m", "M", 8192, 2048, api_base="http://127.0.0.1:9/v1",
                    headers=(("X-Team", "blue"),))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "request.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def _prep(max_output: int = 1000) -> TurnPrep:
    return TurnPrep(
        session_id="s", head="h", model="openai/m", commit_id="c",
        messages=({"role": "user", "content": "hi"},), tools=(), max_output_tokens=max_output,
        estimated_prompt_tokens=10, window=8192,
        occupancy=build_occupancy(window=8192, categories={}, head="h", measured=None),
        compacted=False)


@pytest.mark.asyncio
async def test_the_system_prompt_is_identity_then_global_then_the_chats(store: Store) -> None:
    config = ChatConfig(global_instructions="Answer in French.")
    settings = ChatSettingsService(store)
    builder = RequestBuilder(config, settings)
    await settings.update("s", instructions="Be brief.")
    prompt = await builder.session_prompt("s")
    assert prompt.index(IDENTITY) < prompt.index("Answer in French.") < prompt.index("Be brief.")
    config.set_global_instructions("Answer in Welsh.")  # read again at the next request
    assert "Answer in Welsh." in builder.system_prompt()


def test_the_situation_quotes_the_workspace_agents_file(store: Store, tmp_path: Path) -> None:
    config = ChatConfig()
    builder = RequestBuilder(config, ChatSettingsService(store))
    assert builder.situation() == ""
    folder = tmp_path / "project"
    folder.mkdir()
    config.workspace = folder
    assert builder.situation() == ""  # a workspace without AGENTS.md says nothing
    (folder / "AGENTS.md").write_text("Run the tests before committing.", encoding="utf-8")
    assert builder.situation() == (f"Workspace: {folder}\n\nInstructions from AGENTS.md:\n"
                                   "Run the tests before committing.")


def test_a_continuation_asks_to_carry_on_and_records_what_it_continues(store: Store) -> None:
    builder = RequestBuilder(ChatConfig(), ChatSettingsService(store))
    settings = SessionSettings("s", parameters=ChatParameters(temperature=0.2), revision=2,
                               id="rev-2")
    built = builder.build("s", ENDPOINT, _prep(), settings,
                          {"temperature": 0.2, "max_tokens": 300}, continuing="partial")
    request = built.request
    assert request.messages[-1] == {"role": "user", "content": CONTINUE_PROMPT}
    assert request.max_tokens == 300 and request.extra == {"temperature": 0.2}
    assert request.headers == {"X-Team": "blue"} and request.api_base == ENDPOINT.api_base
    assert built.run_meta == {"settings_revision": "rev-2", CONTINUES_KEY: "partial",
                              "parameters": {"temperature": 0.2, "max_tokens": 300}}


def test_without_parameters_the_reply_cap_falls_back_to_the_budget(store: Store) -> None:
    builder = RequestBuilder(ChatConfig(), ChatSettingsService(store))
    built = builder.build("s", ENDPOINT, _prep(max_output=777), SessionSettings("s"), {}, None)
    assert built.request.max_tokens == 777 and built.request.extra == {}
    assert built.run_meta == {} and built.request.messages == _prep().messages
    capped = builder.build("s", Endpoint("openai/m", "M", 8192, 2048, reply_cap=64), _prep(),
                           SessionSettings("s"), {}, None)
    assert capped.request.max_tokens == 64
