"""Recognising which app wrote an export, and refusing what is not one, with clear words."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from treechat.core.imports import ImportFileError, decode_json, detect_format, parse_export

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


def real(name: str) -> Any:
    return json.loads((DATA / name).read_text(encoding="utf-8"))


CLAUDE = [{"uuid": "c", "name": "n", "chat_messages": [
    {"uuid": "m", "sender": "human", "text": "hi", "created_at": "2024-01-01T00:00:00Z"}]}]
OPENWEBUI = [{"id": "w", "title": "t", "chat": {"history": {"currentId": "m", "messages": {
    "m": {"id": "m", "parentId": None, "childrenIds": [], "role": "user", "content": "hi",
          "timestamp": 1}}}}}]
TREECHAT = {"format": "treechat", "version": 1, "session": {"id": "s", "title": "t",
            "head": "n", "model": "", "created_at": 1.0, "updated_at": 1.0},
            "nodes": [{"id": "n", "seq": 1, "created_at": 1.0, "session_id": "s",
                       "role": "user", "output": "hi"}]}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (real("chatgpt-export-browsing.json"), "chatgpt"),
        (real("chatgpt-export-browsing.json")[0], "chatgpt"),
        (real("librechat-tree.json"), "librechat"),
        ([real("librechat-tree.json")], "librechat"),
        (CLAUDE, "claude"),
        (OPENWEBUI, "openwebui"),
        (OPENWEBUI[0]["chat"], "openwebui"),
        (TREECHAT, "treechat"),
        (real("claude-tools-thinking.json"), "claude"),
        (real("chatgpt-reasoning-tools.json"), "chatgpt"),
        (real("deepseek-export.json"), "deepseek"),
        (real("grok-prod-grok-backend.json"), "grok"),
        (real("grok-prod-grok-backend.json")["conversations"], "grok"),
        (real("aistudio-prompt.json"), "aistudio"),
    ],
)
def test_each_format_is_recognised(data: Any, expected: str) -> None:
    assert detect_format(data) == expected
    parsed = parse_export(data)
    assert parsed.source_format == expected
    assert parsed.conversations


def test_a_damaged_first_conversation_does_not_hide_the_format() -> None:
    data = [{"title": "Corrupted entry", "id": "x"}, *real("chatgpt-export-browsing.json")]
    assert detect_format(data) == "chatgpt"
    parsed = parse_export(data)
    assert len(parsed.conversations) == 2 and parsed.skipped[0].source_id == "x"


@pytest.mark.parametrize(
    ("data", "words"),
    [
        ({"hello": "world"}, "does not recognise this file's format"),
        ([{"role": "user", "content": "hi"}], "does not recognise this file's format"),
        ([], "no conversations"),
        ("just a string", "not a chat export"),
        (42, "not a chat export"),
    ],
)
def test_unknown_format_is_a_clear_error(data: Any, words: str) -> None:
    with pytest.raises(ImportFileError) as info:
        detect_format(data)
    assert words in str(info.value)
    if words != "no conversations":
        assert "ChatGPT" in str(info.value) and "Open WebUI" in str(info.value)


@pytest.mark.parametrize("fraction", [0.5, 0.9, 0.999])
def test_truncated_json_says_so(fraction: float) -> None:
    raw = (DATA / "chatgpt-export-browsing.json").read_bytes()
    with pytest.raises(ImportFileError) as info:
        decode_json(raw[: int(len(raw) * fraction)], "conversations.json")
    message = str(info.value)
    assert message.startswith("conversations.json is not valid JSON: it ends too early")
    assert "line" in message and "column" in message


def test_damaged_json_in_the_middle() -> None:
    with pytest.raises(ImportFileError, match="it is damaged"):
        decode_json(b'[{"a": 1,, "b": 2}, {"c": 3}]', "x.json")


def test_not_text_and_empty_files() -> None:
    with pytest.raises(ImportFileError, match="not UTF-8"):
        decode_json(b"\xff\xfe\x00\x81garbage", "x.json")
    with pytest.raises(ImportFileError, match="is empty"):
        decode_json(b"  \n", "x.json")


def test_byte_order_mark_is_accepted() -> None:
    assert decode_json("\ufeff[1]".encode()) == [1]


def test_unknown_format_name_is_refused() -> None:
    with pytest.raises(ImportFileError, match="unknown import format"):
        parse_export([], "gemini")


def test_two_conversations_sharing_an_id_stay_two_chats() -> None:
    """A file that repeats a conversation id (a hand-merged export) gives two conversations,
    named the same way every time it is read."""
    import json
    from pathlib import Path

    from treechat.core.imports import parse_export

    path = Path(__file__).parents[4] / "tests" / "data" / "imports" / "claude-tools-thinking.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    first = data[0]
    twice = [first, {**first, "name": "Another chat"}]
    ids = [c.source_id for c in parse_export(twice).conversations]
    assert len(ids) == 2 and len(set(ids)) == 2
    assert ids == [c.source_id for c in parse_export(twice).conversations]
