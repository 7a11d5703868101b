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


def api_message(mid: int, parent: int | None, role: str, at: float, **fields: Any
                ) -> dict[str, Any]:
    return {"message_id": mid, "parent_id": parent, "model": "", "role": role,
            "thinking_enabled": False, "ban_edit": False, "ban_regenerate": False,
            "status": "FINISHED", "accumulated_token_usage": 10, "files": [], "tips": [],
            "inserted_at": at, "search_enabled": False, "search_status": None,
            "search_results": None, **fields}


def api_history() -> dict[str, Any]:
    """The chat as DeepSeek's web app gets it from its API: a retry of the first answer
    (two replies to message 1), the user went on from the first reply."""
    return {"code": 0, "msg": "", "data": {"biz_code": 0, "biz_msg": "", "biz_data": {
        "chat_session": {"id": "sess-9", "seq_id": 9, "agent": "chat", "title": "Primes",
                         "title_type": "SYSTEM", "version": 6, "current_message_id": 4,
                         "inserted_at": 1738000000.5, "updated_at": 1738000400.25},
        "chat_messages": [
            api_message(1, None, "USER", 1738000001.0, content="Is 91 prime?",
                        fragments=[{"id": 1, "type": "REQUEST", "content": "Is 91 prime?"}]),
            api_message(2, 1, "ASSISTANT", 1738000010.0, content="No: 7 × 13.",
                        fragments=[{"id": 1, "type": "THINK", "content": "91 = 7 * 13",
                                    "elapsed_secs": 2.1},
                                   {"id": 2, "type": "RESPONSE", "content": "No: 7 × 13."}]),
            api_message(3, 1, "ASSISTANT", 1738000200.0, content="91 is 7 times 13.",
                        thinking_content="check small primes"),
            api_message(4, 2, "USER", 1738000300.0, content="And 97?"),
        ],
    }}}


def test_the_api_history_imports_whole_on_the_branch_the_user_was_on() -> None:
    from treechat.core.imports.detect import detect_format, parse_export

    data = api_history()
    assert detect_format(data) == "deepseek"
    parsed = parse_export(data)
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert conv.title == "Primes" and conv.branches == 2
    by_id = {n.source_id: n for n in conv.nodes}
    assert set(by_id) == {"1", "2", "3", "4"}
    assert [by_id[k].role for k in "1234"] == ["user", "assistant", "assistant", "user"]
    assert by_id["2"].parent_source_id == by_id["3"].parent_source_id == "1"
    assert by_id["2"].output == "No: 7 × 13." and by_id["2"].metadata["reasoning"] == (
        "91 = 7 * 13")
    assert by_id["3"].metadata["reasoning"] == "check small primes"  # older messages
    assert by_id["4"].output == "And 97?" and by_id["4"].parent_source_id == "2"
    assert conv.head_source_id == "4"  # current_message_id, not the newer retry
    assert conv.created_at == 1738000000.5
