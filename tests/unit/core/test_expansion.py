"""The per-item cap: head and tail kept, and its marker names the node and quotes what stood
out in the part it cut, so a setting in the middle of a long read reaches the model."""

from __future__ import annotations

from treechat.core.expansion import capped_text


def _long_read(line: str) -> str:
    rows = [f"    acc_{i % 7} = fold_{i % 11}(rows[{i}])" for i in range(900)]
    rows.insert(450, line)
    return "\n".join(rows)


def test_the_cap_quotes_a_finding_from_the_cut_middle_and_names_the_node() -> None:
    text = _long_read("# The staging server is kestrel, ask before deploying.")
    capped = capped_text(text, "node-7", 4000)
    assert len(capped) <= 4000
    assert capped.startswith(text[:1000]) and capped.endswith(text[-500:])
    assert "node node-7, recall returns it" in capped
    assert "The staging server is kestrel" in capped


def test_a_cut_with_nothing_standing_out_only_names_the_node() -> None:
    rows = "\n".join(f"tests/test_api.py::test_case_{i} PASSED" for i in range(900))
    capped = capped_text(rows, "n1", 4000)
    assert "characters cut; node n1, recall returns it …]" in capped
    assert capped_text("short", "n1", 4000) == "short"
