"""Session search over titles and every branch's messages, on a real DuckDB file."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store
from treechat.store.fulltext import index_for
from treechat.store.search import SearchHit, search_ranked, search_sessions, snippet


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "search.duckdb")
    yield s
    s.close()


def add_session(store: Store, sid: str, title: str, updated: float, hidden: bool = False) -> None:
    session = Session(sid, title, None, "m", updated, hidden=hidden, updated_at=updated)
    store.call(lambda r: r.create_session(session))


def add_node(store: Store, sid: str, nid: str, output: object, parent: str | None,
             role: str = "user") -> None:
    node = Node(nid, 0, 1.0, sid, role, output=output, predecessor=parent)  # type: ignore[arg-type]
    store.call(lambda r: r.apply_change(sid, Change((node,), nid), 1.0))


def find(store: Store, query: str) -> tuple[SearchHit, ...]:
    return store.call(lambda r: search_sessions(r, query))


def test_finds_messages_on_every_branch_not_only_head(store: Store) -> None:
    add_session(store, "a", "Cooking", 10.0)
    add_node(store, "a", "u1", "How long to boil an egg?", None)
    add_node(store, "a", "r1", "About nine minutes for a hard egg.", "u1", "assistant")
    # a retry sibling; HEAD moves to it, so the first reply is off the active path
    add_node(store, "a", "r2", "Seven minutes, then cold water.", "u1", "assistant")
    hits = find(store, "NINE minutes")
    assert [h.session.id for h in hits] == ["a"]
    assert hits[0].node_id == "r1"
    assert "nine minutes" in hits[0].snippet


def test_title_match_newest_first_hidden_excluded(store: Store) -> None:
    add_session(store, "old", "Python packaging", 1.0)
    add_session(store, "new", "python typing", 5.0)
    add_session(store, "gone", "Python deleted", 9.0, hidden=True)
    add_session(store, "other", "Gardening", 7.0)
    hits = find(store, "python")
    assert [h.session.id for h in hits] == ["new", "old"]
    assert all(h.snippet == "" and h.node_id is None for h in hits)


def test_dict_outputs_and_wildcards_are_literal(store: Store) -> None:
    add_session(store, "t", "Tools", 3.0)
    add_node(store, "t", "u", {"text": "rate is 100% of_quota"}, None)
    assert [h.session.id for h in find(store, "100% of_q")] == ["t"]
    assert find(store, "100%%") == ()
    assert find(store, "   ") == ()


def test_snippet_centres_on_the_match() -> None:
    text = "word " * 100 + "NEEDLE here " + "tail " * 100
    cut = snippet(text, "needle", width=40)
    assert "NEEDLE" in cut and cut.startswith("…") and cut.endswith("…")
    assert len(cut) <= 42
    assert snippet("short text", "short") == "short text"


# --- ranked search through the full-text index ---------------------------------------------


def ranked(store: Store, query: str) -> tuple[SearchHit, ...]:
    index = index_for(store)
    return store.call(lambda r: search_ranked(r, index, query))


def test_ranked_search_puts_the_best_match_first_not_the_newest(store: Store) -> None:
    add_session(store, "best", "Travel", 1.0)
    add_node(store, "best", "u1", "Ferry timetable to the island: the ferry leaves at nine, "
             "the ferry back at six.", None)
    add_session(store, "passing", "Groceries", 9.0)  # newer, mentions it once in passing
    add_node(store, "passing", "u2", "Buy milk, bread, eggs, cheese, apples, rice, beans, "
             "and ask about the ferry some day when there is time to talk about trips.", None)
    hits = ranked(store, "ferry")
    assert [h.session.id for h in hits] == ["best", "passing"]
    assert hits[0].node_id == "u1" and "ferry" in hits[0].snippet.lower()


def test_ranked_search_titles_first_hidden_and_purged_left_out(store: Store) -> None:
    add_session(store, "titled", "Ferry plans", 1.0)
    add_session(store, "gone", "Hidden", 5.0, hidden=True)
    add_node(store, "gone", "g1", "ferry ferry ferry", None)
    add_session(store, "body", "Misc", 3.0)
    add_node(store, "body", "b1", "the ferry was late", None)
    add_node(store, "body", "b2", "a second ferry message", "b1")
    assert [h.session.id for h in ranked(store, "ferry")] == ["titled", "body"]
    store.call(lambda r: r.purge_nodes(["b1", "b2"]))
    assert [h.session.id for h in ranked(store, "ferry")] == ["titled"]


def test_ranked_search_matches_words_typed_so_far_and_stays_current(store: Store) -> None:
    add_session(store, "a", "Notes", 1.0)
    add_node(store, "a", "u1", "Reading about photosynthesis today", None)
    assert [h.session.id for h in ranked(store, "photosyn")] == ["a"]  # still typing
    assert ranked(store, "photosynthesis chlorophyll") == ()  # every word must match
    add_node(store, "a", "u2", "chlorophyll absorbs light", "u1")
    assert [h.node_id for h in ranked(store, "chlorophyll")] == ["u2"]  # appended since
    assert ranked(store, "   ") == () and ranked(store, "?!") == ()
    assert ranked(store, "x" * 10_000) == ()
