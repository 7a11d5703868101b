"""Search for the session list: ranked full-text search over every title and every message on
every branch, answered by the full-text index beside the store (`store.fulltext`).

The index is derived data. `catch_up()` brings it up to date in slices, each a short job on the
store's worker, so a first index of years of history never holds up other reads; `sessions()`
indexes whatever is still new before it answers (normally the few nodes written since the
last search).
"""

from __future__ import annotations

import asyncio

from ..store.database import Store
from ..store.fulltext import FullTextIndex, index_for
from ..store.search import SearchHit, search_ranked

CATCH_UP_SLICE = 5000  # nodes indexed per worker job


class SearchService:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._index: FullTextIndex = index_for(store)

    async def sessions(self, query: str, limit: int = 500) -> tuple[SearchHit, ...]:
        """Visible sessions matching `query`, best first (see `search_ranked`). An empty
        query matches nothing."""
        if not query.strip():
            return ()
        index = self._index
        return await self.store.run(lambda repo: search_ranked(repo, index, query, limit))

    async def catch_up(self) -> int:
        """Index everything not yet indexed, a slice at a time. Returns the nodes read."""
        index = self._index
        total = 0
        while True:
            n = await self.store.run(lambda repo: index.sync(repo, batch=CATCH_UP_SLICE))
            total += n
            if n < CATCH_UP_SLICE:
                return total
            await asyncio.sleep(0)  # let other store jobs in between slices

    async def rebuild(self) -> int:
        """Throw the index away and build it again from the store."""
        index = self._index
        return await self.store.run(index.rebuild)
