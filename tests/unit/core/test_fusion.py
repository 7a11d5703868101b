"""Reciprocal rank fusion: agreement between lists wins, weights count, ties keep the order
of first appearance."""

from __future__ import annotations

from treechat.core.fusion import Ranking, boost_list, fuse


def test_agreement_beats_one_list_top() -> None:
    fused = fuse([Ranking(["a", "b", "c"]), Ranking(["b", "d"])])
    assert [k for k, _ in fused] == ["b", "a", "d", "c"]


def test_weights_and_per_key_weights() -> None:
    plain = fuse([Ranking(["a"]), Ranking(["b"], weight=2.0)])
    assert [k for k, _ in plain] == ["b", "a"]
    damped = fuse([Ranking(["a", "b"], each={"a": 0.1}), Ranking(["c"])])
    assert [k for k, _ in damped] == ["c", "b", "a"]


def test_ties_keep_first_appearance_and_duplicates_count_once() -> None:
    assert [k for k, _ in fuse([Ranking(["x", "x"]), Ranking(["y"])])] == ["x", "y"]
    assert boost_list(["a", "b", "c"], keep={"c", "a"}) == ["a", "c"]
