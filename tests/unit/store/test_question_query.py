"""The lexical query of a question, shaped by how many passages of a real FTS5 table hold
each word: rare words decide, common ones are left to the AND, absent ones are left out."""

from __future__ import annotations

import sqlite3

from treechat.store.fulltext import TOKENIZE
from treechat.store.question_query import RARE_PASSAGES, QuestionQuery, question_query


def table(rows: list[str]) -> sqlite3.Connection:
    con = sqlite3.connect(":memory:")
    con.execute(f"CREATE VIRTUAL TABLE passages USING fts5(body, tokenize={TOKENIZE!r})")
    con.executemany("INSERT INTO passages(body) VALUES (?)", [(r,) for r in rows])
    return con


COMMON = ["The name of the module and the value it gives."] * (RARE_PASSAGES + 5)


def test_a_small_index_asks_for_any_word_it_holds() -> None:
    con = table(["Our sailboat Windlass is moored at the north marina."])
    found = question_query(con, "passages", "Where is the sailboat Windlass docked?")
    assert found == QuestionQuery('"sailboat" OR "windlass"', ranked=True)  # "docked": absent
    assert question_query(con, "passages", "zebra crossing?") is None


def test_common_words_give_way_to_rare_ones() -> None:
    con = table([*COMMON, "The marina keeps the name of every boat moored there."])
    found = question_query(con, "passages", "what name has the boat at the marina")
    assert found is not None and found.ranked
    assert "name" not in found.fts and '"boat"' in found.fts and '"marina"' in found.fts


def test_a_question_of_common_words_asks_for_them_together_unranked() -> None:
    con = table(COMMON)
    found = question_query(con, "passages", "which value does the name give")
    assert found is not None and not found.ranked
    assert found.fts.count(" AND ") == 2 and '"name"' in found.fts
    hits = con.execute("SELECT count(*) FROM passages WHERE passages MATCH ?",
                       (found.fts,)).fetchone()
    assert hits[0] == len(COMMON)  # stems as the index does: "gives" is held for "give"
