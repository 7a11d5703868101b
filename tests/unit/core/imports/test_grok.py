"""Grok export parsing: wrapped conversations, senders in any case, BSON times, branches."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treechat.core.imports import grok

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


def fixture() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (DATA / "grok-prod-grok-backend.json").read_text(encoding="utf-8"))
    return data


def test_branches_from_parent_response_ids_and_head_at_the_newest_tip() -> None:
    parsed = grok.parse(fixture())
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert conv.title == "Moon distance" and conv.branches == 2
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["g2"].parent_source_id == "g1" and by_id["g3"].parent_source_id == "g1"
    assert conv.head_source_id == "g5"
    # listed out of order in the file; stored parent first, times from BSON dates
    assert conv.nodes[0].source_id == "g1"
    assert by_id["g1"].created_at == 1748779200.0
    assert conv.created_at == 1748779200.0  # the conversation's ISO time


def test_senders_in_any_case_and_model_names_as_senders() -> None:
    (conv,) = grok.parse(fixture()).conversations
    roles = {n.source_id: n.role for n in conv.nodes}
    assert roles == {"g1": "user", "g2": "assistant", "g3": "assistant", "g4": "user",
                     "g5": "assistant"}
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["g3"].metadata["model"] == "grok-3"


def test_thinking_traces_are_reasoning_and_images_placeholders() -> None:
    (conv,) = grok.parse(fixture()).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["g2"].metadata["reasoning"] == "Average lunar distance is 384,400 km."
    assert by_id["g3"].metadata["reasoning"] == "Convert to light-seconds."
    # an image reply has no text: its placeholder keeps it (its card names the image)
    (image,) = by_id["g5"].metadata["attachments"]
    assert image["kind"] == "image" and image["ref"].endswith("img-77/image.jpg")
    assert by_id["g5"].output == ""
    assert by_id["g1"].metadata["attachments"][0]["ref"] == "asset-uuid-1"


def test_bson_and_iso_times() -> None:
    assert grok.grok_time({"$date": {"$numberLong": "1705312200000"}}) == 1705312200.0
    assert grok.grok_time({"$date": "2024-01-15T10:30:00Z"}) == 1705314600.0
    assert grok.grok_time("2024-01-15T10:30:00.000000Z") == 1705314600.0
    assert grok.grok_time(None) is None


def response(rid: str, sender: str, text: str, at: int, parent: str | None,
             **extra: Any) -> dict[str, Any]:
    return {"response": {"response_id": rid, "_id": f"oid-{rid}", "conversation_id": "c",
                         "message": text, "sender": sender,
                         "create_time": {"$date": {"$numberLong": str(at)}},
                         "parent_response_id": parent, **extra}}


def test_responses_named_by_response_id_chain_whole_onto_the_open_branch() -> None:
    """Responses whose parents name their `response_id` (not their `_id`): every one is
    imported, the retry as a branch, HEAD where the conversation says it was."""
    data = {"conversations": [{
        "conversation": {"id": "c", "title": "Tides", "create_time": "2025-06-01T12:00:00Z",
                         "current_response_id": "r3"},
        "responses": [
            response("r1", "human", "What makes tides?", 1_748_779_200_000, None),
            response("r2", "assistant", "The Moon's pull.", 1_748_779_205_000, "r1",
                     model="grok-3"),
            response("r2b", "assistant", "Gravity of Moon and Sun.", 1_748_779_300_000, "r1"),
            response("r3", "human", "And the Sun?", 1_748_779_400_000, "r2"),
        ],
    }]}
    parsed = grok.parse(data)
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert set(by_id) == {"r1", "r2", "r2b", "r3"}
    assert by_id["r2"].parent_source_id == by_id["r2b"].parent_source_id == "r1"
    assert by_id["r3"].parent_source_id == "r2" and conv.branches == 2
    assert conv.head_source_id == "r3"  # not the newer retry's branch


def test_camel_case_fields_as_the_web_api_writes_them() -> None:
    data = {"conversations": [{"conversation": {"id": "c", "title": "T"}, "responses": [
        {"responseId": "a", "sender": "human", "message": "Hi", "createTime":
         "2025-06-01T12:00:00Z", "parentResponseId": None},
        {"responseId": "b", "sender": "assistant", "message": "Hello", "createTime":
         "2025-06-01T12:00:05Z", "parentResponseId": "a", "thinkingTrace": "greet back"},
    ]}]}
    (conv,) = grok.parse(data).conversations
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["b"].parent_source_id == "a"
    assert by_id["b"].metadata["reasoning"] == "greet back"
    assert by_id["a"].created_at is not None
