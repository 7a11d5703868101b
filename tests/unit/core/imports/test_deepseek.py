"""DeepSeek export parsing: the `mapping` tree of `fragments`, several roots, reasoning."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treechat.core.imports import deepseek, detect_format

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


def fixture() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        (DATA / "deepseek-export.json").read_text(encoding="utf-8"))
    return data


def test_edits_of_the_first_message_are_roots_and_head_is_the_newest_tip() -> None:
    parsed = deepseek.parse(fixture())
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert conv.title == "Prime check" and conv.branches == 2
    roots = [n.source_id for n in conv.nodes if n.parent_source_id is None]
    assert roots == ["1", "3"]
    assert conv.head_source_id == "5"
    assert conv.model == "deepseek-chat"


def test_think_is_the_reasoning_and_response_the_answer() -> None:
    (conv,) = deepseek.parse(fixture()).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert (by_id["1"].role, by_id["1"].output) == ("user", "Is 91 prime?")
    assert (by_id["2"].role, by_id["2"].output) == ("assistant", "No: 91 = 7 × 13.")
    assert by_id["2"].metadata["reasoning"] == "91 = 7 * 13."
    assert by_id["2"].metadata["model"] == "deepseek-reasoner"


def test_search_fragments_are_a_tool_call_and_files_are_placeholders() -> None:
    (conv,) = deepseek.parse(fixture()).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    call, result, answer = by_id["4#part1"], by_id["4#result1"], by_id["4"]
    assert call.metadata["tool_calls"][0]["name"] == "search"
    assert call.metadata["tool_calls"][0]["arguments"] == ["is 97 prime"]
    assert (result.role, result.edge, result.parent_source_id) == ("tool", "caller", "4#part1")
    assert "https://primes.example/97" in result.output
    assert (answer.output, answer.metadata["reasoning"]) == (
        "Yes, 97 is prime.", "Confirmed by the search.")
    assert by_id["5"].parent_source_id == "4"
    (placeholder,) = by_id["3"].metadata["attachments"]
    assert (placeholder["name"], placeholder["ref"]) == ("numbers.csv", "file-ds-1")
    assert by_id["3"].output == "Is 97 prime? Search to be sure."


def test_chatgpt_shaped_mapping_is_not_taken_for_deepseek() -> None:
    chatgpt_like = [{"id": "x", "create_time": 1.0, "current_node": "m", "mapping": {
        "m": {"id": "m", "parent": None, "children": [], "message": {
            "author": {"role": "user"}, "content": {"content_type": "text", "parts": ["hi"]}}}}}]
    assert detect_format(chatgpt_like) == "chatgpt"
    assert detect_format(fixture()) == "deepseek"
