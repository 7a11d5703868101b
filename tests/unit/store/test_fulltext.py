"""The full-text index beside a real DuckDB store: built from the store, kept current as nodes
are appended, rebuilt when it is missing, damaged or belongs to another store, and safe with
queries that are empty, huge or all punctuation."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store
from treechat.store.fulltext import (
    MAX_QUERY_TERMS,
    PASSAGE_CHARS,
    FullTextIndex,
    QueryError,
    all_terms_query,
    any_terms_query,
    index_for,
    index_path,
    near_pairs_query,
    passages,
)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "chats.duckdb")
    s.call(lambda r: r.create_session(Session("s", "one", None, "m", 1.0)))
    yield s
    s.close()


def add(store: Store, nid: str, text: object, parent: str | None = None,
        role: str = "user", session: str = "s") -> None:
    node = Node(nid, 0, 1.0, session, role, output=text, predecessor=parent)  # type: ignore[arg-type]
    store.call(lambda r: r.apply_change(session, Change((node,), nid), 1.0))


def ids(index: FullTextIndex, query: str) -> list[str]:
    return [p.node_id for p in index.search(any_terms_query(query))]


def test_index_lives_beside_the_store_and_follows_appends(store: Store) -> None:
    index = index_for(store)
    assert index is index_for(store)
    assert index.path == index_path(store.path) and index.path.parent == store.path.parent
    add(store, "u1", "The heron nests by the river.")
    assert store.call(index.sync) == 1
    assert ids(index, "heron") == ["u1"]
    add(store, "a1", "Herons eat fish.", "u1", "assistant")
    assert ids(index, "heron") == ["u1"]  # not yet synced
    assert store.call(index.sync) == 1
    assert sorted(ids(index, "heron")) == ["a1", "u1"]  # stemmed: herons ~ heron
    assert store.call(index.sync) == 0  # nothing new: nothing read


def test_index_survives_reopen_and_rebuilds_when_the_file_is_damaged(tmp_path: Path) -> None:
    path = tmp_path / "chats.duckdb"
    with Store.open(path) as store:
        store.call(lambda r: r.create_session(Session("s", "one", None, "m", 1.0)))
        add(store, "u1", "marmalade recipe")
        index = FullTextIndex(index_path(path))
        store.call(index.sync)
        index.close()
        reopened = FullTextIndex(index_path(path))
        assert store.call(reopened.sync) == 0  # its high-water mark was kept
        assert ids(reopened, "marmalade") == ["u1"]
        reopened.close()
        index_path(path).write_bytes(b"this is not a database" * 100)
        damaged = FullTextIndex(index_path(path))
        assert store.call(damaged.sync) == 1  # replaced and rebuilt from the store
        assert ids(damaged, "marmalade") == ["u1"]
        damaged.close()


def test_an_index_of_another_store_is_rebuilt(tmp_path: Path) -> None:
    shared = tmp_path / "index.sqlite"
    for name, word in (("a.duckdb", "albatross"), ("b.duckdb", "bittern")):
        with Store.open(tmp_path / name) as store:
            store.call(lambda r: r.create_session(Session("s", "one", None, "m", 1.0)))
            add(store, "u1", f"a {word} flew over")
            index = FullTextIndex(shared)
            store.call(index.sync)
            assert ids(index, word) == ["u1"]
            other = "albatross" if word == "bittern" else "bittern"
            assert ids(index, other) == []
            index.close()


def test_long_messages_are_indexed_in_passages_that_come_back_whole(store: Store) -> None:
    filler = "".join(f"line {i} of an ordinary file\n" for i in range(2000))
    cut = len(filler) // 2
    text = filler[:cut] + "the staging server is obsidian\n" + filler[cut:]
    add(store, "t1", text)
    index = index_for(store)
    store.call(index.sync)
    (hit,) = index.search(any_terms_query("staging server"))
    assert hit.node_id == "t1" and "obsidian" in hit.text
    assert len(hit.text) <= PASSAGE_CHARS
    assert text[hit.offset:hit.offset + len(hit.text)] == hit.text
    pieces = list(passages(text))
    assert "".join(p for _, p in pieces) == text


def test_queries_empty_punctuation_or_huge() -> None:
    for bad in ("", "   ", "?!.,", "\"'"):
        with pytest.raises(QueryError):
            any_terms_query(bad)
        with pytest.raises(QueryError):
            all_terms_query(bad)
    huge = " ".join(f"word{i}" for i in range(3000))  # a pasted page, ~10,000+ characters
    assert len(huge) > 10_000
    assert any_terms_query(huge).count(" OR ") == MAX_QUERY_TERMS - 1
    # quotes inside a query are words, never FTS5 syntax
    assert all_terms_query('say "hi" NEAR(x) AND') == '"say" AND "hi" AND "near" AND "x" AND "and"*'
    assert near_pairs_query("heron") is None


def test_restricting_to_nodes_and_ranking_near_words_first(store: Store) -> None:
    add(store, "u1", "call me later this month " + "call " * 50)
    add(store, "u2", "whoever is on call this month is eskil", "u1")
    add(store, "u3", "on call this month: nobody", "u2", session="s")
    index = index_for(store)
    store.call(index.sync)
    seqs = {p.node_id: p.seq for p in index.search(any_terms_query("call month"))}
    only = index.search(any_terms_query("call month"), seqs=[seqs["u2"]])
    assert [p.node_id for p in only] == ["u2"]
    assert index.search(any_terms_query("call month"), seqs=[]) == []
    near = near_pairs_query("who is on call this month?")
    assert near is not None
    assert set(ids_near(index, near)) == {"u1", "u2", "u3"}


def ids_near(index: FullTextIndex, fts: str) -> list[str]:
    return [p.node_id for p in index.search(fts)]


@pytest.mark.skipif(__import__("os").name == "nt", reason="POSIX file modes")
def test_the_index_files_are_this_users_only(store: Store) -> None:
    import os
    import stat

    old = os.umask(0o022)
    try:
        index = index_for(store)
        add(store, "u1", "a private thought about herons")
        store.call(index.sync)
    finally:
        os.umask(old)
    files = [p for p in index.path.parent.iterdir() if p.name.startswith(index.path.name)]
    assert index.path in files
    for path in files:  # the index and its -wal / -shm
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path.name


def test_attachment_texts_are_kept_by_hash_apart_from_the_messages(tmp_path: Path) -> None:
    path = tmp_path / "chats.duckdb"
    notes, page = "a" * 64, "b" * 64
    filler = "".join(f"line {i} of a long file\n" for i in range(200))
    with Store.open(path) as store:
        store.call(lambda r: r.create_session(Session("s", "one", None, "m", 1.0)))
        add(store, "u1", "Here are my notes about the heron.")
        index = FullTextIndex(index_path(path))
        store.call(index.sync)
        index.add_files({notes: "File: notes.txt\nthe heron nests by the river",
                         page: filler + "the kingfisher dives\n" + filler})
        index.add_files({notes: "a second text for the same bytes is ignored"})
        assert index.files_indexed([notes, page, "c" * 64]) == {notes, page}
        found = index.search_files(any_terms_query("kingfisher"), shas=[notes, page])
        (hit,) = found
        assert hit.sha256 == page and "the kingfisher dives" in hit.text
        assert hit.offset > 0 and hit.length == len(filler) * 2 + len("the kingfisher dives\n")
        assert [f.sha256 for f in index.search_files(any_terms_query("heron"), shas=[notes])
                ] == [notes]
        assert index.search_files(any_terms_query("heron"), shas=[page]) == []
        assert index.search_files(any_terms_query("ignored"), shas=[notes]) == []
        # message search never sees a file's text
        assert ids(index, "heron") == ["u1"] and ids(index, "kingfisher") == []
        index.close()
        reopened = FullTextIndex(index_path(path))
        assert store.call(reopened.sync) == 0
        assert reopened.files_indexed([notes]) == {notes}  # kept with the index
        store.call(reopened.rebuild)
        assert reopened.files_indexed([notes]) == set()  # derived data: refilled on demand
        reopened.close()
