"""recall through the retrieval engine on a real store: a folded fact asked in other words
(no word in common) comes back as its original text, named by its node."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.context_graph import ChainBuilder

from treechat.core.dag import Change
from treechat.core.model import Session
from treechat.providers.tokenizer import counter_for
from treechat.services.context import ContextEngine
from treechat.store.database import Store

COUNTER = counter_for("gpt-4o")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "engine.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def test_a_folded_fact_is_found_in_other_words(store: Store) -> None:
    b = ChainBuilder()

    def append(nodes: list) -> None:  # type: ignore[type-arg]
        store.call(lambda r: r.apply_change(b.session_id, Change(tuple(nodes), b.head), b.now))

    append(b.turn("Help me plan the summer.", "Gladly."))
    append(b.turn("Our sailboat is called Windlass and she is moored at the north marina.",
                  "Noted."))
    for i in range(40):
        append(b.turn(f"Turn {i}: the code is {7000 + i}. " + "detail " * 60, "ok " * 30))

    async def run() -> None:
        engine = ContextEngine(store, COUNTER)
        prep = await engine.prepare(b.session_id, model="openai/gpt-4o", window=8192,
                                    system_prompt="You are helpful.", now=b.now + 1)
        assert prep.compacted  # the early turns are folded into a summary
        found = await engine.recall(b.session_id, "What name did we give the yacht?",
                                    now=b.now + 2, limit=3)
        assert any("Windlass" in h.text for h in found.hits)
        hit = next(h for h in found.hits if "Windlass" in h.text)
        assert f"node {hit.node_id}" in found.text() and hit.role == "user"
        assert hit.state == "summarized"

    asyncio.run(run())


def test_with_the_search_models_server_away_recall_finds_the_words(store: Store) -> None:
    """A search model on a server that stopped answering: recall falls back to the words of
    the question instead of failing the model's tool call."""
    from tests.support.embedding_server import embedding_server

    from treechat.providers.embeddings_remote import SearchModel
    from treechat.services.retrieval.search_model import change_search_model

    b = ChainBuilder()

    def append(nodes: list) -> None:  # type: ignore[type-arg]
        store.call(lambda r: r.apply_change(b.session_id, Change(tuple(nodes), b.head), b.now))

    append(b.turn("Help me plan the summer.", "Gladly."))  # the first message stays shown
    append(b.turn("Our sailboat is called Windlass and she is moored at the north marina.",
                  "Noted."))
    for i in range(40):
        append(b.turn(f"Turn {i}: the code is {7000 + i}. " + "detail " * 60, "ok " * 30))
    with embedding_server() as server:
        asyncio.run(change_search_model(store, SearchModel("ollama", "bag-embed", server.url)))
        server.behaviour = "error"

        async def run() -> None:
            engine = ContextEngine(store, COUNTER)
            await engine.prepare(b.session_id, model="openai/gpt-4o", window=8192,
                                 system_prompt="You are helpful.", now=b.now + 1)
            found = await engine.recall(b.session_id, "sailboat Windlass marina",
                                        now=b.now + 2, limit=3)
            assert any("Windlass" in h.text for h in found.hits)

        asyncio.run(run())
