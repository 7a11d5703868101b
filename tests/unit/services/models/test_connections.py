"""Connections through real parts: a DuckDB file, litellm over HTTP to servers on 127.0.0.1
that speak OpenAI's and Ollama's wire formats, the probe of a free port standing in for the
usual ones. What a user sees: a server is added by its URL, its models and windows come from
it, the request reaches that server with the right (or no) Authorization, the reply is
recorded under the model's own name, and the ring uses the server's window."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from keyring.backends import fail
from tests.support.fake_provider import FakeProvider, FakeReply
from tests.support.model_servers import OllamaModel, OllamaServer, OpenAIServer
from tests.unit.providers.local.test_server_detection import FakeServer, free_port

from treechat.providers.connections import ConnectionModel, ConnectionProblem
from treechat.providers.errors import ErrorKind
from treechat.providers.keys import KeyStore
from treechat.providers.local.server_detection import LocalServers, ServerSpec
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelCatalog, ModelChoice
from treechat.services.models.connections import SETTINGS_CONNECTIONS, ConnectionService
from treechat.services.transfer.exporting import export_session
from treechat.services.turns.events import TextDelta, TurnEvent, TurnFailed, TurnFinished

LAB_KEY = "sk-lab-secret-0123456789"


class Events(list[TurnEvent]):
    def __call__(self, event: TurnEvent) -> None:
        self.append(event)

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self if isinstance(e, kind)]


def memory_keys() -> KeyStore:
    """The key store as it runs without a system keychain: keys live in memory for the
    session (the real code path; the Secret Service round trip is tested in test_keys and
    the command-line tests)."""
    return KeyStore(backend=fail.Keyring(), environ={})


@pytest.fixture
def ollama() -> Iterator[OllamaServer]:
    server = OllamaServer([OllamaModel("llama3.2:3b", context_length=131_072, num_ctx=16_384)])
    yield server
    server.stop()


@pytest_asyncio.fixture
async def services(tmp_path: Path, ollama: OllamaServer,
                   monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Services]:
    # A real OpenAI key in the environment must never reach a server that needs none.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-must-not-leak-0123456789")
    probe = LocalServers([ServerSpec("ollama", "Ollama", ollama.url)])
    built = build_services(tmp_path, bundled=False, local_servers=probe, keys=memory_keys())
    yield built
    await built.close()
    built.close_store()


def connections(s: Services) -> ConnectionService:
    assert s.connections is not None
    return s.connections


async def send(s: Services, model: str, text: str = "Hello") -> tuple[Events, Any]:
    session = await s.chat.sessions.create()
    events = Events()
    node = await s.chat.send(session.id, text, model=model, on_event=events)
    return events, node


@pytest.mark.asyncio
async def test_an_openai_compatible_server_without_a_key(services: Services) -> None:
    lab = OpenAIServer([{"id": "lab-model", "object": "model", "context_length": 32_768},
                        {"id": "nomic-embed-text", "object": "model"}])
    try:
        status = await connections(services).add("openai-compatible", "Lab", base_url=lab.url,
                                                 headers=[("X-Team", "blue")])
        assert status.state == "ready"
        conn = status.connection
        assert (conn.id, conn.label, conn.base_url) == ("lab", "Lab", f"{lab.url}/v1")
        assert conn.models == (ConnectionModel("lab-model", 32_768),)  # no embedding model
        events, node = await send(services, "lab/lab-model")
        assert not events.of(TurnFailed)
        (hit,) = lab.chat_hits()
        assert hit.authorization is None  # not a placeholder, not $OPENAI_API_KEY
        assert {k.lower(): v for k, v in hit.headers.items()}["x-team"] == "blue"  # its headers
        assert lab.requests[-1].body["model"] == "lab-model"
        assert node.name == "lab/lab-model"
        assert node.metadata["model"] == "lab/lab-model"
        assert node.metadata["model_label"] == "Lab · lab-model"
        (finished,) = events.of(TurnFinished)
        assert finished.occupancy.window == 32_768  # the server's window, not a guess
        session = await services.chat.sessions.view(node.session_id)
        assert session.session.model == "lab/lab-model"  # the chat remembers its model
        markdown = await export_session(services.store, node.session_id, "md")
        assert "Assistant (Lab · lab-model)" in markdown  # the same name in an export
    finally:
        lab.stop()


@pytest.mark.asyncio
async def test_a_server_that_requires_a_key(services: Services) -> None:
    lab = OpenAIServer([{"id": "secure-model", "object": "model"}], required_key=LAB_KEY)
    service = connections(services)
    try:
        status = await service.add("openai-compatible", "lab", base_url=lab.openai_base)
        assert status.state == "unchecked"
        assert "answered HTTP 401: You didn't provide an API key" in status.reason
        await service.set_key("lab", LAB_KEY)
        status = await service.refresh_one("lab")
        assert status.state == "ready" and status.connection.has_key
        assert lab.hits[-1].authorization == f"Bearer {LAB_KEY}"
        events, node = await send(services, "lab/secure-model")
        assert not events.of(TurnFailed) and node.metadata["model"] == "lab/secure-model"
        assert lab.chat_hits()[-1].authorization == f"Bearer {LAB_KEY}"
        # The key lives in the key store only: never in the store's file.
        stored = services.store.call(lambda r: r.get_setting(SETTINGS_CONNECTIONS))
        assert LAB_KEY not in str(stored)
        outcome = await service.test("lab")
        assert outcome.ok and outcome.model == "secure-model"
        assert lab.requests[-1].body["max_tokens"] == 1
        await service.set_key("lab", "sk-wrong-key-9876543210")
        outcome = await service.test("lab")
        assert not outcome.ok
        assert "You didn't provide an API key" in outcome.detail  # the server's own words
    finally:
        lab.stop()


@pytest.mark.asyncio
async def test_ollama_found_by_the_probe_is_addressed_as_ollama(
    services: Services, ollama: OllamaServer
) -> None:
    statuses = await connections(services).refresh()
    (found,) = [s for s in statuses if s.connection.id == "ollama"]
    assert found.state == "detected" and found.connection.detected
    groups = await services.models.groups()
    (group,) = [g for g in groups if g.connection == "ollama"]
    assert [c.label for c in group.models] == ["Ollama · llama3.2:3b"]
    assert group.models[0].window == 16_384  # /api/show, lowered to the model file's num_ctx
    events, node = await send(services, "ollama/llama3.2:3b")
    assert not events.of(TurnFailed)
    (chat,) = ollama.chats
    assert chat.body["model"] == "llama3.2:3b"
    assert not any(k.lower() == "authorization" for k in chat.headers)
    assert node.output == ollama.reply
    assert (node.metadata["model"], node.metadata["model_label"]) == (
        "ollama/llama3.2:3b", "Ollama · llama3.2:3b"
    )
    (finished,) = events.of(TurnFinished)
    assert finished.occupancy.window == 16_384
    assert finished.occupancy.basis == "measured"  # Ollama's prompt_eval_count was used


@pytest.mark.asyncio
async def test_a_server_that_appears_then_goes_away(tmp_path: Path) -> None:
    port = free_port()
    probe = LocalServers([ServerSpec("lmstudio", "LM Studio", f"http://127.0.0.1:{port}")])
    built = build_services(tmp_path, bundled=False, local_servers=probe, keys=memory_keys())
    changes: list[int] = []
    connections(built).add_listener(lambda: changes.append(1))
    try:
        assert not [g for g in await built.models.refresh() if g.connection == "lmstudio"]
        assert changes == []
        server = FakeServer({"/v1/models": {"data": [{"id": "qwen2.5-7b-instruct"}]}},
                            port=port)
        try:
            (group,) = [g for g in await built.models.refresh() if g.connection == "lmstudio"]
            assert (group.state, group.detected) == ("detected", True)
            assert group.models[0].id == "lmstudio/qwen2.5-7b-instruct"
            assert group.models[0].available
            assert len(changes) == 1  # the window is told, and re-reads the groups
        finally:
            server.stop()
        (group,) = [g for g in await built.models.refresh() if g.connection == "lmstudio"]
        assert group.state == "unreachable"  # kept, marked, not removed
        assert [c.available for c in group.models] == [False]
        assert group.reason.startswith("nothing is listening on")
        assert len(changes) == 2
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
async def test_connections_are_kept_in_the_store(tmp_path: Path) -> None:
    lab = OpenAIServer([{"id": "m1"}, {"id": "m2"}])
    try:
        first = build_services(tmp_path, bundled=False, detect_local_servers=False,
                               keys=memory_keys())
        await connections(first).add("openai-compatible", "lab", base_url=lab.openai_base,
                                     headers=[("X-Team", "blue")], timeout=45.0)
        await connections(first).add("openai-compatible", "lab2", base_url=lab.openai_base)
        await first.close()
        first.close_store()
        again = build_services(tmp_path, bundled=False, detect_local_servers=False,
                               keys=memory_keys())
        try:
            saved = connections(again).saved()
            assert [c.id for c in saved] == ["lab", "lab2"]  # two of one kind
            assert saved[0].headers == (("X-Team", "blue"),) and saved[0].timeout == 45.0
            assert [m.name for m in saved[0].models] == ["m1", "m2"]  # listed before
            assert lab.hits[0].headers.get("X-Team") == "blue"  # sent with the listing
            assert "X-Team" not in lab.hits[-1].headers  # and only for its connection
            await connections(again).remove("lab2")
            assert [c.id for c in connections(again).saved()] == ["lab"]
        finally:
            await again.close()
            again.close_store()
    finally:
        lab.stop()


# --- bad input --------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_an_address_that_is_not_http_is_refused_and_nothing_is_saved(
    services: Services,
) -> None:
    service = connections(services)
    for url in ("ftp://127.0.0.1:21", "127.0.0.1:8000", "file:///etc/passwd", "http://"):
        with pytest.raises(ConnectionProblem, match="http"):
            await service.add("openai-compatible", "lab", base_url=url)
    with pytest.raises(ConnectionProblem, match="keychain"):
        await service.add("openai-compatible", "lab", base_url="http://me:sk-secret@127.0.0.1:1")
    with pytest.raises(ConnectionProblem, match="cannot name a connection"):
        await service.add("openai-compatible", "a/b", base_url="http://127.0.0.1:1")
    with pytest.raises(ConnectionProblem, match="unknown kind"):
        await service.add("telnet", "lab", base_url="http://127.0.0.1:1")
    assert service.saved() == ()
    assert services.store.call(lambda r: r.get_setting(SETTINGS_CONNECTIONS)) is None


@pytest.mark.asyncio
async def test_a_server_answering_html_says_so(services: Services) -> None:
    web = FakeServer({"/v1/models": "<!doctype html><html><body>router login</body></html>"})
    try:
        status = await connections(services).add("openai-compatible", "web", base_url=web.url)
        assert status.state == "unchecked"
        assert "did not answer with JSON (it sent a web page)" in status.reason
        events, _ = await send(services, "web/anything")
        (failed,) = events.of(TurnFailed)  # the turn fails with a message, not a traceback
        assert failed.error.message
    finally:
        web.stop()


@pytest.mark.asyncio
async def test_a_server_that_never_answers_times_out_and_nothing_blocks(
    services: Services,
) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)  # the kernel accepts; nobody ever answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        ticks = 0

        async def tick() -> None:
            nonlocal ticks
            while True:
                await asyncio.sleep(0.01)
                ticks += 1

        ticker = asyncio.ensure_future(tick())
        status = await connections(services).add("openai-compatible", "slow", base_url=url,
                                                 timeout=0.5)
        ticker.cancel()
    assert status.state == "unchecked" and "did not answer in time" in status.reason
    assert ticks >= 10  # the event loop kept turning while the server said nothing


@pytest.mark.asyncio
async def test_a_list_of_five_thousand_models(services: Services) -> None:
    many = [{"id": f"model-{i:04d}", "object": "model"} for i in range(5000)]
    lab = OpenAIServer(many)
    try:
        status = await connections(services).add("openai-compatible", "big", base_url=lab.url)
        assert len(status.connection.models) == 5000
        groups = await services.models.groups()
        (group,) = [g for g in groups if g.connection == "big"]
        assert len(group.models) == 5000
        assert group.models[0].id == "big/model-0000" and group.models[-1].window_estimated
    finally:
        lab.stop()


# --- the provider seam ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_the_chat_service_calls_the_provider_it_is_given(tmp_path: Path) -> None:
    fake = FakeProvider()
    fake.queue(FakeReply("First answer."), FakeReply("", error=ErrorKind.AUTH,
                                                     detail="Incorrect API key provided"))
    choice = ModelChoice("openai/fake-model", "Fake", "openai", api_base="http://127.0.0.1:9/v1")
    built = build_services(tmp_path, bundled=False, detect_local_servers=False,
                           extra_models=(choice,), keys=memory_keys(), provider=fake)
    try:
        session = await built.chat.sessions.create()
        events = Events()
        node = await built.chat.send(session.id, "Hi", model=choice.id, on_event=events)
        assert node is not None and node.output == "First answer."
        assert "".join(e.text for e in events.of(TextDelta)) == "First answer."
        (request,) = fake.requests
        assert request.model == "openai/fake-model" and request.api_key is None
        (finished,) = events.of(TurnFinished)
        assert finished.occupancy.basis == "measured"
        events = Events()
        await built.chat.send(session.id, "Again", model=choice.id, on_event=events)
        (failed,) = events.of(TurnFailed)
        assert failed.error.kind == "auth"
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
async def test_model_lists_go_through_the_provider(tmp_path: Path) -> None:
    fake = FakeProvider(models={"lab": [ConnectionModel("a", 4096)]})
    service = ConnectionService(None, memory_keys(), provider=fake)
    status = await service.add("openai-compatible", "lab", base_url="http://127.0.0.1:9/v1")
    assert status.connection.models == (ConnectionModel("a", 4096),)
    assert fake.listed == [("lab", None)]
    down = await service.add("openai-compatible", "other", base_url="http://127.0.0.1:9/v1")
    assert down.state == "unchecked" and "nothing is listening" in down.reason


@pytest.mark.asyncio
async def test_a_second_key_for_a_hosted_provider_is_a_connection_of_its_own() -> None:
    keys = memory_keys()
    service = ConnectionService(None, keys)
    status = await service.add("hosted", "work", provider="openai", api_key="sk-work-0123456789")
    assert status.state == "ready" and status.connection.key_account == "connection:work"
    catalog = ModelCatalog(keys=keys, connections=service)
    endpoint = await catalog.resolve("work/gpt-4o")
    assert (endpoint.model, endpoint.label, endpoint.api_base) == (
        "openai/gpt-4o", "work · GPT-4o", None
    )
    assert endpoint.api_key == "sk-work-0123456789" and not endpoint.window_estimated
    assert keys.get_key("openai") is None  # the provider's own entry is untouched


@pytest.mark.asyncio
async def test_the_context_dialog_can_say_a_window_is_estimated(tmp_path: Path) -> None:
    fake = FakeProvider(
        models={"lab": [ConnectionModel("mystery-7b"), ConnectionModel("big", 65_536)]}
    )
    built = build_services(tmp_path, bundled=False, detect_local_servers=False,
                           keys=memory_keys(), provider=fake)
    try:
        await connections(built).add("openai-compatible", "lab", base_url="http://127.0.0.1:9")
        guessed = await built.chat.model_endpoint("lab/mystery-7b")
        assert (guessed.window, guessed.window_estimated) == (8192, True)
        served = await built.chat.model_endpoint("lab/big")
        assert (served.window, served.window_estimated) == (65_536, False)
        assert served.label == "lab · big"
        unknown = await built.chat.model_endpoint("nowhere/else")  # never raises
        assert unknown.window_estimated and unknown.label == "nowhere · else"
    finally:
        await built.close()
        built.close_store()


@pytest.mark.asyncio
async def test_a_command_line_turn_lets_go_of_the_store_while_local_servers_are_probed(
    tmp_path: Path, ollama: OllamaServer
) -> None:
    """Probing this machine's usual ports for a model's address is a wait on other programs:
    with `release_store` the store is free meanwhile, and open again after."""
    from treechat.services.store_life.drafts import StoreRelease
    from treechat.store.database import Store

    probe = LocalServers([ServerSpec("ollama", "Ollama", ollama.url)])
    store = Store.open(tmp_path / "c.duckdb")
    try:
        service = ConnectionService(store, memory_keys(), detector=probe)
        service.release_store = StoreRelease()
        seen: list[bool] = []
        probe.add_listener(lambda _: seen.append(store.released))
        routed = await service.route("ollama/llama3.2:3b")
        assert routed is not None and routed[1] == "llama3.2:3b"
        assert seen == [True] and not store.released
    finally:
        store.close()


@pytest.mark.asyncio
async def test_an_edit_changes_only_what_it_names_and_refuses_the_rest() -> None:
    fake = FakeProvider(models={"lab": [ConnectionModel("a", 4096)]})
    service = ConnectionService(None, memory_keys(), provider=fake)
    await service.add("openai-compatible", "lab", base_url="http://127.0.0.1:9/v1",
                      label="Lab", timeout=30)
    await service.update("lab", label="The lab", headers=[("X-Team", "blue")], timeout=45,
                         models=["b", "c"], base_url="http://127.0.0.1:9")
    (saved,) = service.saved()
    assert (saved.label, saved.headers, saved.timeout) == ("The lab", (("X-Team", "blue"),), 45)
    assert saved.base_url == "http://127.0.0.1:9/v1"  # an OpenAI-compatible root gains /v1
    with pytest.raises(ConnectionProblem, match="cannot change kind"):
        await service.update("lab", kind="ollama")
    assert service.saved() == (saved,)


# --- checked at start, and by replies -----------------------------------------------------


def _reopened(tmp_path: Path) -> Services:
    return build_services(tmp_path, bundled=False, detect_local_servers=False,
                          keys=memory_keys())


@pytest.mark.asyncio
async def test_added_servers_are_checked_in_the_background_at_start(tmp_path: Path) -> None:
    lab = OpenAIServer([{"id": "m1"}])
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)  # the kernel accepts; nobody ever answers
        quiet_url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        try:
            first = _reopened(tmp_path)
            await connections(first).add("openai-compatible", "lab", base_url=lab.openai_base,
                                         list_models=False)
            await connections(first).add("openai-compatible", "quiet", base_url=quiet_url,
                                         list_models=False)
            await first.close()
            first.close_store()

            again = _reopened(tmp_path)
            conns = connections(again)
            heard: list[None] = []
            conns.add_listener(lambda: heard.append(None))
            try:
                assert conns.status("lab").state == "unchecked"  # type: ignore[union-attr]
                conns.start_detection(interval=None, check_within=1.0)
                # it returned at once: nothing was awaited, the check runs behind
                assert conns.status("lab").state == "unchecked"  # type: ignore[union-attr]
                for _ in range(3000):
                    quiet = conns.status("quiet")
                    if quiet is not None and quiet.reason:
                        break
                    await asyncio.sleep(0.01)
                lab_now, quiet_now = conns.status("lab"), conns.status("quiet")
                assert lab_now is not None and lab_now.state == "ready"
                assert [m.name for m in lab_now.connection.models] == ["m1"]
                assert quiet_now is not None and quiet_now.state == "unchecked"
                assert "1 s" in quiet_now.reason  # bounded, and it says so
                assert heard, "the picker and Settings hear of the new states"
            finally:
                await again.close()
                again.close_store()
        finally:
            lab.stop()


@pytest.mark.asyncio
async def test_a_reply_through_a_server_marks_it_reachable(tmp_path: Path) -> None:
    from tests.support.loopback_server import LoopbackProvider

    server = LoopbackProvider()  # answers chats, has no model list
    services = _reopened(tmp_path)
    conns = connections(services)
    try:
        status = await conns.add("openai-compatible", "lab", base_url=server.openai_base)
        assert status.state == "unchecked" and status.reason  # the list could not be read
        conns.note_answered("lab/loopback-model", status.checked_at - 60)  # an old reply
        assert conns.status("lab").state == "unchecked"  # type: ignore[union-attr]
        events, _ = await send(services, "lab/loopback-model")
        assert events.of(TurnFinished)
        conns.note_answered("lab/loopback-model", conns.clock.now())
        now = conns.status("lab")
        assert now is not None and now.state == "ready" and now.reason == ""
        conns.note_answered("nobody/model", conns.clock.now())  # no such connection: nothing
    finally:
        await services.close()
        services.close_store()
        server.stop()
