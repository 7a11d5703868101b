"""Half of a surrogate pair stands for no character: it becomes U+FFFD wherever text is kept,
and text without one is handed back as it came."""

from __future__ import annotations

from treechat.core.unicode_text import storable, storable_values


def test_a_lone_half_becomes_the_replacement_character_and_pairs_stay() -> None:
    assert storable("a\ud800b\udfffc") == "a\ufffdb\ufffdc"
    assert storable("ok 😀").encode("utf-8") == "ok 😀".encode()  # a whole pair is a character
    text = "plain ascii"
    assert storable(text) is text


def test_values_are_cleaned_through_lists_tuples_and_dicts() -> None:
    value = ("id", ["x\ud800", {"k\udc00": "v"}], 3, None)
    assert storable_values(value) == ("id", ["x\ufffd", {"k\ufffd": "v"}], 3, None)
    clean = ("id", ["x", {"k": "v"}], 3)
    assert storable_values(clean) is clean
