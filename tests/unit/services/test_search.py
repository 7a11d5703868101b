"""The session list's search over a real store: words first, then for a question of several
words the chats that mean it; one word (typing) finds only what holds it."""

from __future__ import annotations

import asyncio
from pathlib import Path

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.services.search import SearchService
from treechat.store.database import Store


def test_words_first_then_meaning(tmp_path: Path) -> None:
    with Store.open(tmp_path / "chats.duckdb") as store:
        texts = {"boat": "Our sailboat is called Windlass and she is moored at the marina.",
                 "tax": "The tax forms are in the blue folder in the desk drawer.",
                 "yacht": "We should buy a new yacht cover before winter."}
        for sid, text in texts.items():
            node = Node(f"n-{sid}", 0, 1.0, sid, "user", output=text)
            store.call(lambda r, s=sid, n=node: (
                r.create_session(Session(s, s.title(), None, "m", 1.0)),
                r.apply_change(s, Change((n,), n.id), 1.0)))
        search = SearchService(store)

        async def run() -> None:
            await search.catch_up()
            words = await search.sessions("tax forms")
            assert words[0].session.id == "tax"  # it holds every word: first
            hits = await search.sessions("what name did we give the vessel")
            ids = [h.session.id for h in hits]
            assert "boat" in ids  # no word in common: found by meaning
            boat = next(h for h in hits if h.session.id == "boat")
            assert boat.node_id == "n-boat" and "Windlass" in boat.snippet
            # one of its words matches ("folder") but not every one: found by meaning still
            hits = await search.sessions("folder with tax papers")
            assert "tax" in [h.session.id for h in hits]
            one_word = await search.sessions("yacht")
            assert [h.session.id for h in one_word] == ["yacht"]

        asyncio.run(run())
