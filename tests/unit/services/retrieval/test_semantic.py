"""The two stages of meaning with the real models: the quick one embeds at once, the fine one
in the background; a search before the fine one has run still judges its likeliest candidates
by it, and once it has run the quick index is not needed; removed passages leave both."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from treechat.services.retrieval.engine import default_embedder, fine_embedder
from treechat.services.retrieval.semantic import Meaning, fine_path, refine_backlog

PASSAGES = {
    1: "The quarterly report covers revenue by region and the hiring plan.",
    2: "Remember to water the tomatoes before the weekend heat arrives.",
    3: "Our boat is named Marigold and it is moored at the marina.",
    4: "I rewrote the parser so that it accepts trailing commas.",
}


def texts(rowids: Sequence[int]) -> list[tuple[int, str]]:
    return [(r, PASSAGES[r]) for r in rowids]


def meaning(tmp_path: Path) -> Meaning:
    m = Meaning(tmp_path / "v.usearch", default_embedder(), fine_embedder())
    m.add(list(PASSAGES.items()))
    return m


def test_a_search_before_refining_embeds_its_candidates_finely(tmp_path: Path) -> None:
    m = meaning(tmp_path)
    assert m.unrefined(list(PASSAGES)) == [1, 2, 3, 4]
    q = m.query("what did we call the vessel?")
    ranked = m.rank_within(q, list(PASSAGES), texts)
    assert ranked[0][0] == 3
    assert all(s > m.floor for _, s in ranked)  # unrelated passages are not "found"
    assert 3 not in m.unrefined(list(PASSAGES))  # judged by the fine model, and kept


def test_refining_in_the_background_covers_everything_and_persists(tmp_path: Path) -> None:
    m = meaning(tmp_path)
    seen: list[tuple[int, int]] = []
    done = asyncio.run(refine_backlog(m, list(PASSAGES), texts, slice_size=3,
                                      progress=lambda d, t: seen.append((d, t))))
    assert done == 4 and seen == [(3, 4), (4, 4)]
    assert m.unrefined(list(PASSAGES)) == []
    m.quick.save()
    assert fine_path(tmp_path / "v.usearch").exists()
    again = Meaning(tmp_path / "v.usearch", default_embedder(), fine_embedder())
    assert again.unrefined(list(PASSAGES)) == []
    q = again.query("when should the vegetable garden get a drink?")
    assert again.nearest(q, 2, texts, complete=True)[0][0] == 2


def test_removed_passages_leave_both_stages(tmp_path: Path) -> None:
    m = meaning(tmp_path)
    asyncio.run(refine_backlog(m, list(PASSAGES), texts))
    m.remove([3])
    q = m.query("what did we call the vessel?")
    assert 3 not in dict(m.nearest(q, 4, texts, complete=True))
    assert m.quick.present([3 * 16]) == []
