"""The retrieval engine over a real DuckDB store with the real offline embedder: a question in
other words than the message's finds it, exact words still do, a message gives several
passages, the indexes follow appends and are rebuilt when the full-text index is."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.retrieval.engine import RetrievalEngine, vectors_path
from treechat.store.database import Store
from treechat.store.fulltext import QueryError


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "chats.duckdb")
    s.call(lambda r: r.create_sessions([Session("s", "one", None, "m", 1.0),
                                        Session("t", "two", None, "m", 1.0)]))
    yield s
    s.close()


def add(store: Store, nid: str, text: str, parent: str | None = None,
        role: str = "user", session: str = "s") -> None:
    node = Node(nid, 0, 1.0, session, role, output=text, predecessor=parent)
    store.call(lambda r: r.apply_change(session, Change((node,), nid), 1.0))


FILLER = [
    "The quarterly report covers revenue by region and the hiring plan.",
    "Remember to water the tomatoes before the weekend heat arrives.",
    "The train to the coast leaves at seven and takes three hours.",
    "I rewrote the parser so that it accepts trailing commas.",
]


def test_meaning_finds_a_message_in_other_words(store: Store) -> None:
    for i, text in enumerate(FILLER):
        add(store, f"f{i}", text, f"f{i - 1}" if i else None)
    add(store, "boat", "Our boat is named Marigold and it is moored at the marina.", "f3")
    engine = RetrievalEngine(store)
    hits = asyncio.run(engine.search("what did we call the vessel?", limit=3))
    assert hits[0].node_id == "boat"
    assert hits[0].semantic_rank == 1 and hits[0].lexical_rank == 0  # no shared word
    exact = asyncio.run(engine.search("Marigold", limit=3))
    assert exact[0].node_id == "boat" and exact[0].lexical_rank == 1


def test_a_long_message_returns_its_passages_and_appends_are_followed(store: Store) -> None:
    paragraphs = [f"Paragraph {i} is about the inventory of screws and bolts in bin {i}."
                  for i in range(30)]
    paragraphs[17] = "The password for the guest wifi is written on the fridge."
    add(store, "long", "\n\n".join(paragraphs), role="tool")
    engine = RetrievalEngine(store)
    (hit,) = asyncio.run(engine.search("where is the wireless network key noted?", limit=1))
    assert hit.node_id == "long" and "guest wifi" in hit.text
    assert hit.offset > 0 and len(hit.text) < 1000  # the passage, not the whole result
    add(store, "new", "My dentist appointment moved to Thursday.", "long", session="t")
    hits = asyncio.run(engine.search("when is the visit to the tooth doctor", limit=2))
    assert hits[0].node_id == "new" and hits[0].session_id == "t"
    only_s = asyncio.run(engine.search("tooth doctor", limit=5, session_id="s"))
    assert all(h.session_id == "s" for h in only_s)


def test_vectors_are_private_persist_and_follow_a_rebuild(store: Store) -> None:
    add(store, "u1", "The heron nests by the river.")
    engine = RetrievalEngine(store)
    assert asyncio.run(engine.catch_up()) == 1
    path = vectors_path(store.path)
    assert path.exists() and stat.S_IMODE(os.stat(path).st_mode) == 0o600
    again = RetrievalEngine(store)
    assert asyncio.run(again.catch_up()) == 0  # read from the file, nothing to embed
    assert len(again.vectors()) == 1
    assert asyncio.run(again.rebuild()) == 1  # a rebuilt full-text index: embedded anew
    with pytest.raises(QueryError):
        asyncio.run(again.search("   "))


def test_a_damaged_vector_file_is_rebuilt(store: Store) -> None:
    add(store, "u1", "The heron nests by the river.")
    asyncio.run(RetrievalEngine(store).catch_up())
    vectors_path(store.path).write_bytes(b"not an index")
    engine = RetrievalEngine(store)
    hits = asyncio.run(engine.search("a wading bird builds its home near water", limit=1))
    assert hits and hits[0].node_id == "u1"
