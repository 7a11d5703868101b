"""The engine's memory of commits: bounded, saved without waiting, and the walk from a head
back to its nearest commit with the nodes written since."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.context_graph import ChainBuilder

from treechat.core.commit import ContextCommit, make_commit
from treechat.core.dag import Change
from treechat.core.model import Session
from treechat.services.context.commit_cache import CommitCache
from treechat.store import commits as commit_store
from treechat.store.database import Store


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "cache.duckdb")
    s.call(lambda r: r.create_session(Session("s", "t", None, "m", 0.0)))
    yield s
    s.close()


def _commit(head: str, n: int) -> ContextCommit:
    return make_commit(None, (), (), session_id="s", head_node_id=head, now=float(n),
                       max_seq=n)


def test_the_oldest_commits_go_once_the_cache_is_full(store: Store) -> None:
    size = [2]
    cache = CommitCache(store, cache_size=lambda: size[0], walk_limit=lambda: 8)
    a, b, c = _commit("h1", 1), _commit("h2", 2), _commit("h3", 3)
    for commit in (a, b, c):
        cache.remember(commit)
    assert cache.get(a.id) is None and cache.get(c.id) is c
    size[0] = 1  # the engine's config changed: read at the next use
    cache.remember(c)
    assert cache.get(b.id) is None


def test_a_saved_commit_is_found_by_a_new_cache(store: Store) -> None:
    b = ChainBuilder("s")
    nodes = b.turn("hello", "hi there")
    store.call(lambda r: r.apply_change("s", Change(tuple(nodes), b.head), b.now))
    cache = CommitCache(store, cache_size=lambda: 8, walk_limit=lambda: 8)
    first = store.call(lambda r: cache.load(r, "s", None))
    assert first.head == b.head and first.base is None
    assert [n.id for n in first.nodes] == [n.id for n in nodes]
    commit = _commit(b.head or "", 2)
    cache.persist([commit])
    store.call(lambda r: None)  # the worker runs the save before any later read
    assert store.call(lambda r: commit_store.load_commit(r, commit.id)) is not None
    again = CommitCache(store, cache_size=lambda: 8, walk_limit=lambda: 8)
    loaded = store.call(lambda r: again.load(r, "s", None))
    assert loaded.base is not None and loaded.base.id == commit.id and loaded.nodes == ()


def test_an_empty_session_has_no_head_and_forgetting_keeps_the_commits(store: Store) -> None:
    cache = CommitCache(store, cache_size=lambda: 8, walk_limit=lambda: 8)
    empty = store.call(lambda r: cache.load(r, "s", None))
    assert empty.head is None and empty.nodes == ()
    commit = _commit("h", 1)
    cache.remember(commit)
    cache.forget()
    assert cache.get(commit.id) is commit
