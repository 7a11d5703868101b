"""Google AI Studio prompt files: chunks merged into turns, thoughts as reasoning, content ids
so a branch copy of a prompt becomes a branch of the same conversation."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from treechat.core.imports import aistudio

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


def fixture(name: str = "aistudio-prompt.json") -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return data


def test_turns_thoughts_and_the_image_chunk() -> None:
    parsed = aistudio.parse(fixture())
    assert parsed.skipped == ()
    (conv,) = parsed.conversations
    assert conv.model == "gemini-2.5-pro" and conv.branches == 1
    assert conv.title == "What bird is this?"
    assert [(n.role, n.output if n.role != "system" else n.input) for n in conv.nodes] == [
        ("system", "Answer in one sentence."),
        ("user", "What bird is this?"),  # the image is its card, not text
        ("assistant", "It is a European robin."),
        ("user", "Where does it live?"),
        ("assistant", "Across Europe, from gardens to woods."),
    ]
    robin = conv.nodes[2]
    assert robin.metadata["reasoning"].startswith("**Identifying the bird**")
    assert "robin" not in robin.metadata["reasoning"].split("\n")[0]
    assert conv.nodes[1].metadata["attachments"][0]["ref"] == "1AbCdriveImageId"
    assert conv.head_source_id == conv.nodes[-1].source_id


def test_a_branch_copy_shares_the_opening_and_thought_parts_are_reasoning() -> None:
    (first,) = aistudio.parse(fixture()).conversations
    (branch,) = aistudio.parse(fixture("aistudio-prompt-branch.json")).conversations
    assert branch.source_id == first.source_id  # the same conversation
    shared = {n.source_id for n in first.nodes} & {n.source_id for n in branch.nodes}
    assert len(shared) == 3  # system, the question, the answer about the robin
    tip = branch.nodes[-1]
    assert tip.output == "Mostly worms, insects and berries."
    assert tip.metadata["reasoning"] == "Worms first, I think."


def test_a_file_without_chunks_is_skipped() -> None:
    parsed = aistudio.parse({"chunkedPrompt": {"chunks": []}})
    assert parsed.conversations == ()
    assert parsed.skipped[0].reason == "prompt has no messages to import"


def test_an_inline_image_carries_its_bytes_to_the_importer() -> None:
    data = fixture()
    data["chunkedPrompt"]["chunks"].insert(0, {"role": "user", "text": "And this one?",
                                               "inlineImage": {"mimeType": "image/png",
                                                               "data": "iVBORw0KGgo="}})
    (conv,) = aistudio.parse(data).conversations
    first = next(n for n in conv.nodes if n.role == "user")
    (inline, _drive) = first.metadata["attachments"]
    assert (inline["placeholder"], inline["kind"], inline["data"]) == (True, "image",
                                                                      "iVBORw0KGgo=")
    assert "data" not in inline["source"]  # the bytes are carried once, not in the source
