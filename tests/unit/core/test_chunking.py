"""Passages for retrieval: paragraphs, whole code blocks and tool-result sections, covering the
text exactly; a heading joins the paragraph it names; a long block is cut at line breaks."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from treechat.core.chunking import MAX_CHARS, UNITS_PER_PASSAGE, chunks, units


def test_paragraphs_code_and_sections_are_passages() -> None:
    text = ("# Notes\n\nOur boat is named Marigold.\n\nThe second paragraph is another matter.\n\n"
            "```python\ndef f():\n\n    return 1\n```\n"
            "[section]\na=1\n"
            "==> log.txt <==\nline one\nline two\n")
    pieces = [p for _, p in chunks(text)]
    assert pieces[0] == "# Notes\n\nOur boat is named Marigold.\n\n"  # the heading joins it
    assert pieces[1] == "The second paragraph is another matter.\n\n"
    assert pieces[2] == "```python\ndef f():\n\n    return 1\n```\n"  # blank line kept inside
    assert pieces[3] == "[section]\na=1\n"
    assert pieces[4] == "==> log.txt <==\nline one\nline two\n"


def test_long_blocks_are_cut_at_lines_and_offsets_point_into_the_text() -> None:
    text = "".join(f"row {i}: nothing to see\n" for i in range(500))
    pieces = list(chunks(text))
    assert all(len(p) <= MAX_CHARS and p.endswith("\n") for _, p in pieces)
    assert all(text[o:o + len(p)] == p for o, p in pieces)


@given(st.text(alphabet=st.sampled_from("ab .\n#`[]=-"), max_size=3000))
def test_passages_cover_the_text_exactly(text: str) -> None:
    pieces = list(chunks(text))
    assert "".join(p for _, p in pieces) == text
    assert all(0 < len(p) <= MAX_CHARS for _, p in pieces)


def test_units_are_sentences_with_fragments_joined() -> None:
    assert units("Our boat is named Windlass and she is moored at the marina. "
                 "The tax forms are in the blue folder in the desk drawer. Ok.") == [
        "Our boat is named Windlass and she is moored at the marina.",
        "The tax forms are in the blue folder in the desk drawer. Ok."]
    many = " ".join(f"Sentence number {i} says something long enough." for i in range(40))
    assert len(units(many)) == UNITS_PER_PASSAGE
    assert units("") == [""]
