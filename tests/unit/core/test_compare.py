"""Which blocks of a reply no other reply to the same message shares."""

from __future__ import annotations

from treechat.core.compare import only_here, overlap, words_of


def test_a_point_only_one_reply_makes_is_marked() -> None:
    a = ["Use a cache in front of the database.", "Measure before tuning."]
    b = ["Put a cache in front of the database.", "Rewrite it in Rust."]
    assert only_here([a, b]) == ((False, True), (False, True))


def test_the_same_words_in_another_order_are_shared() -> None:
    a = ["the queue drains before shutdown"]
    b = ["before shutdown, the queue drains"]
    assert only_here([a, b]) == ((False,), (False,))


def test_blocks_without_words_and_a_lone_reply_are_never_marked() -> None:
    assert only_here([["---", ""], ["something else entirely"]]) == (
        (False, False), (True,))
    assert only_here([["anything at all"]]) == ((False,),)


def test_three_replies_a_block_shared_by_any_other_is_not_marked() -> None:
    a, b, c = ["cedar outside"], ["maple inside"], ["cedar outside, birch trim"]
    marks = only_here([a, b, c], shared=0.4)
    assert marks == ((False,), (True,), (False,))


def test_overlap_is_the_share_of_words_in_common() -> None:
    assert overlap(words_of("A b c"), words_of("a B d")) == 0.5
    assert overlap(words_of(""), words_of("x")) == 0.0
