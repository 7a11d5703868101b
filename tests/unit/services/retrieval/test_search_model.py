"""The search-model setting over a real store and a real embedding server on 127.0.0.1: it
round-trips, a chosen model replaces the offline stages, changing it re-embeds chats and
knowledge with that model alone (the old vectors gone), a model that does not answer is refused
and nothing changes, and the connections' embedding models are the ones offered."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.embedding_server import EmbeddingServer, embedding_server

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.connections import Connection
from treechat.providers.embeddings import EmbedderUnavailable
from treechat.providers.embeddings_remote import SearchModel
from treechat.services.retrieval.engine import default_embedder, engine_for, vectors_path
from treechat.services.retrieval.knowledge import KnowledgeService
from treechat.services.retrieval.search_model import (
    change_search_model,
    find_offered,
    offered,
    reembed,
    saved_search_model,
)
from treechat.store.database import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "chats.duckdb")
    s.call(lambda r: r.create_sessions([Session("s", "one", None, "m", 1.0)]))
    yield s
    s.close()


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with embedding_server() as s:
        yield s


def add(store: Store, nid: str, text: str, parent: str | None = None) -> None:
    node = Node(nid, 0, 1.0, "s", "user", output=text, predecessor=parent)
    store.call(lambda r: r.apply_change("s", Change((node,), nid), 1.0))


def test_the_setting_round_trips_and_the_default_is_offline(store: Store,
                                                             server: EmbeddingServer) -> None:
    assert store.call(saved_search_model) is None
    assert engine_for(store).embedder is default_embedder()
    model = SearchModel("ollama", "nomic-embed-text", server.url)
    asyncio.run(change_search_model(store, model))
    assert store.call(saved_search_model) == model
    engine = engine_for(store)
    assert engine.embedder.name == model.name and engine.fine_embedder is None
    asyncio.run(change_search_model(store, None))
    assert store.call(saved_search_model) is None
    assert engine_for(store).embedder is default_embedder()


def test_a_model_that_does_not_answer_is_refused_and_nothing_changes(
        store: Store, server: EmbeddingServer) -> None:
    server.behaviour = "error"
    with pytest.raises(EmbedderUnavailable, match="HTTP 404"):
        asyncio.run(change_search_model(store, SearchModel("openai", "nope", server.url)))
    assert store.call(saved_search_model) is None


FILLER = [
    "Invoices are due on the first Monday of the month.",
    "The quarterly report covers revenue by region and the hiring plan.",
    "The train to the coast leaves at seven and takes three hours.",
    "I rewrote the parser so that it accepts trailing commas.",
]


def test_a_change_re_embeds_chats_and_knowledge_with_the_new_model_alone(
        store: Store, server: EmbeddingServer, tmp_path: Path) -> None:
    add(store, "a", "The heron nests by the river under the willow.")
    for i, text in enumerate(FILLER):
        add(store, f"f{i}", text, f"f{i - 1}" if i else "a")
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("The spare key hangs behind the garden shed door.\n")

    async def before() -> None:
        await engine_for(store).catch_up()
        knowledge = KnowledgeService(store, offload=False)
        await knowledge.add("home", [str(docs)])
        await knowledge.reindex("home")

    asyncio.run(before())
    meta = vectors_path(store.path).with_name(vectors_path(store.path).name + ".json")
    assert json.loads(meta.read_text())["model"].startswith("wordllama/")

    model = SearchModel("openai", "bag-embed", server.url + "/v1")
    progress: list[tuple[int, int]] = []
    files: list[tuple[str, int, int]] = []

    async def change() -> int:
        await change_search_model(store, model)
        return await reembed(store, chats=lambda done, n: progress.append((done, n)),
                             knowledge=lambda name, p: files.append((name, p.done, p.total)))

    assert asyncio.run(change()) == 5
    assert progress[-1][0] == 5 and files[-1] == ("home", 1, 1)
    saved = json.loads(meta.read_text())
    assert saved["model"] == model.name and saved["ndim"] == 512 and saved["n"] == 5
    embedded = [t for r in server.requests for t in r["input"]]
    assert any("heron" in t for t in embedded) and any("spare key" in t for t in embedded)

    engine = engine_for(store)
    hits = asyncio.run(engine.search("heron willow", limit=2))
    assert hits[0].node_id == "a" and hits[0].semantic_rank == 1
    knowledge = KnowledgeService(store, offload=False)
    assert knowledge.embedder.name == model.name
    found = asyncio.run(knowledge.search(["home"], "spare key shed", limit=1))
    assert found and "garden shed" in found[0].text


def test_the_embedding_models_a_server_lists_are_offered_by_name(
        server: EmbeddingServer, tmp_path: Path) -> None:
    ollama = Connection("ollama", "ollama", base_url=server.url, detected=True)
    studio = Connection("lmstudio", "lmstudio", base_url=server.url)
    listed = [(ollama, asyncio.run(_listed(ollama))), (studio, asyncio.run(_listed(studio)))]
    # by what the server says each does (bge-m3), by family from an older server
    # (all-minilm), by name; the chat model is not offered
    assert listed[0][1] == ("all-minilm:l6-v2", "bge-m3:latest", "nomic-embed-text:latest")
    assert listed[1][1] == ("bge-small-en", "text-embedding-nomic")  # by type or by name
    choices = offered(listed, gguf_files=[tmp_path / "broken-embed.gguf"])
    host = server.url.split("://")[1]
    assert [m.name for m in choices] == [f"ollama:all-minilm:l6-v2@{host}",
                                         f"ollama:bge-m3:latest@{host}",
                                         f"ollama:nomic-embed-text:latest@{host}",
                                         f"openai:bge-small-en@{host}",
                                         f"openai:text-embedding-nomic@{host}"]
    assert choices[3].base_url == server.url + "/v1"
    assert find_offered("nomic-embed-text:latest", choices) == choices[2]
    assert find_offered(choices[4].name, choices) == choices[4]
    assert find_offered("llama3.2", choices) is None
    # what is offered answers
    assert asyncio.run(change_search_model_of(choices[3])) == 512
    assert asyncio.run(change_search_model_of(choices[1])) == 512


async def _listed(conn: Connection) -> tuple[str, ...]:
    from treechat.providers.model_lists import fetch_embedding_models, list_client

    async with list_client() as client:
        return await fetch_embedding_models(conn, client)


async def change_search_model_of(model: SearchModel) -> int:
    from treechat.providers.embeddings_remote import embedder_for

    return await asyncio.to_thread(lambda: embedder_for(model).ndim)


def test_the_engine_replaced_stops_and_leaves_the_new_models_file_alone(
        store: Store, server: EmbeddingServer) -> None:
    add(store, "a", "The heron nests by the river under the willow.")
    old = engine_for(store)
    model = SearchModel("ollama", "bag-embed", server.url)
    asyncio.run(change_search_model(store, model))
    assert old.retired and not engine_for(store).retired
    assert asyncio.run(old.catch_up()) == 0  # no work for a model no longer used
    assert asyncio.run(reembed(store)) == 1
    meta = vectors_path(store.path).with_name(vectors_path(store.path).name + ".json")
    assert json.loads(meta.read_text())["model"] == model.name


def test_with_the_search_models_server_away_the_chat_list_still_finds_words(
        store: Store, server: EmbeddingServer) -> None:
    from treechat.services.search import SearchService

    add(store, "a", "The heron nests by the river under the willow.")
    asyncio.run(change_search_model(store, SearchModel("ollama", "bag-embed", server.url)))
    server.behaviour = "error"
    search = SearchService(store)
    assert asyncio.run(search.catch_up()) == 1  # the words are indexed all the same
    hits = asyncio.run(search.sessions("heron willow"))
    assert [h.session.id for h in hits] == ["s"]
