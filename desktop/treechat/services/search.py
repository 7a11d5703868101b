"""Search for the session list: ranked full-text search over every title and every message on
every branch, answered by the full-text index beside the store (`store.fulltext`), and for a
question of several words the chats the retrieval engine finds by meaning after those (the
same engine as `treechat search` and `recall`).

The index is derived data. `catch_up()` brings it up to date in slices, each a short job on the
store's worker, so a first index of years of history never holds up other reads; `sessions()`
indexes whatever is still new before it answers (normally the few nodes written since the
last search).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..providers.embeddings import EmbedderUnavailable
from ..store.database import Store
from ..store.fulltext import FullTextIndex, index_for
from ..store.search import SNIPPET_CHARS, SearchHit, search_ranked
from .retrieval.engine import Progress, RetrievalEngine, engine_for
from .retrieval.search_model import change_search_model, reembed, search_model_of

if TYPE_CHECKING:
    from ..providers.embeddings_remote import SearchModel
    from .retrieval.knowledge import IndexProgress, KnowledgeService

log = logging.getLogger(__name__)

CATCH_UP_SLICE = 5000  # nodes indexed per worker job
# Chats found by meaning alone that the list adds after the word matches: the best few, from
# passages among the engine's first few semantic matches (a question in other words still
# finds its chat; a list of every vaguely related chat would hide it).
MEANING_SESSIONS = 5
MEANING_RANK = 5
# The fine stage of meaning embeds in the background at this pace: idle a second for every
# second of work, which leaves the window and the replies most of the machine.
REFINE_PAUSE = 1.0


class SearchService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._index: FullTextIndex = index_for(store)
        engine_for(store)  # the search model's setting is read now, not on a first search

    @property
    def _engine(self) -> RetrievalEngine:
        return engine_for(self.store)  # the current one: changing the search model replaces it

    async def sessions(self, query: str, limit: int = 500) -> tuple[SearchHit, ...]:
        """Visible sessions matching `query`, best first (see `search_ranked`), then, for a
        query of two words or more, the sessions whose messages mean it. An empty query
        matches nothing."""
        if not query.strip():
            return ()
        index = self._index
        found = await self.store.run(lambda repo: search_ranked(repo, index, query, limit))
        if len(query.split()) < 2 or len(found) >= limit:
            return found
        try:
            hits = await self._engine.search(query, limit=20, catch_up=False)
        except (ValueError, EmbedderUnavailable) as exc:
            if isinstance(exc, EmbedderUnavailable):  # the words' matches still stand
                log.warning("search by meaning: %s", exc)
            return found
        seen = {h.session.id for h in found}
        extra: dict[str, tuple[str, str]] = {}
        for h in hits:
            # Some of its words may match as well ("fruit trees" finds "apple trees"): the
            # list above wants every word, so it is not there and belongs here.
            if (h.semantic_rank and h.semantic_rank <= MEANING_RANK
                    and h.session_id not in seen and h.session_id not in extra):
                extra[h.session_id] = (h.node_id, " ".join(h.text.split())[:SNIPPET_CHARS])
            if len(extra) >= MEANING_SESSIONS:
                break
        if not extra:
            return found
        ids = list(extra)
        sessions = await self.store.run(lambda repo: [repo.get_session(i) for i in ids])
        more = tuple(SearchHit(session=s, snippet=extra[s.id][1], node_id=extra[s.id][0])
                     for s in sessions if s is not None and not s.hidden)
        return found + more[:limit - len(found)]

    async def catch_up(self) -> int:
        """Index everything not yet indexed, a slice at a time, then embed the passages not
        yet embedded (on a worker thread, in slices): by the quick model, then, at a
        background pace, by the fine one. Returns the nodes read."""
        index = self._index
        total = 0
        while True:
            n = await self.store.run(lambda repo: index.sync(repo, batch=CATCH_UP_SLICE))
            total += n
            if n < CATCH_UP_SLICE:
                break
            await asyncio.sleep(0)  # let other store jobs in between slices
        try:
            await self._engine.catch_up()
            await self._engine.refine(pause=REFINE_PAUSE)
        except EmbedderUnavailable as exc:  # a search model's server that is away
            log.warning("embedding for search: %s", exc)
        return total

    # --- the search model ------------------------------------------------------------

    def search_model(self) -> SearchModel | None:
        """The model that embeds for search (None: the offline default)."""
        return search_model_of(self._engine.embedder)

    async def use_search_model(self, model: SearchModel | None) -> None:
        """Search with `model` from now on (raises `EmbedderUnavailable` when it does not
        answer: nothing changes then); `embed_again` fills its indexes."""
        await change_search_model(self.store, model)

    async def embed_again(self, *, chats: Progress | None = None,
                          knowledge: Callable[[str, IndexProgress], None] | None = None,
                          service: KnowledgeService | None = None) -> int:
        """Embed chats and knowledge with the current search model (see `reembed`)."""
        return await reembed(self.store, chats=chats, knowledge=knowledge, service=service)

    async def rebuild(self) -> int:
        """Throw the index away and build it again from the store."""
        index = self._index
        return await self.store.run(index.rebuild)
