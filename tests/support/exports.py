"""Export files built in code for tests and benchmarks: many messages, real shapes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any


def add_message(mapping: dict[str, Any], mid: str, parent: str, role: str, body: str,
                at: float, recipient: str = "all", name: str | None = None) -> None:
    if recipient != "all":
        content = {"content_type": "code", "language": "python", "text": body}
    elif role == "tool":
        content = {"content_type": "execution_output", "text": body}
    else:
        content = {"content_type": "text", "parts": [body]}
    mapping[mid] = {"id": mid, "parent": parent, "children": [], "message": {
        "id": mid, "author": {"role": role, "name": name, "metadata": {}},
        "create_time": at, "content": content, "status": "finished_successfully",
        "recipient": recipient, "metadata": {"model_slug": "gpt-4o"}}}
    mapping[parent]["children"].append(mid)


def big_chatgpt_export(conversations: int, per_conversation: int) -> list[dict[str, Any]]:
    """A ChatGPT-shaped export with branches (retries) and paired tool traffic."""
    out = []
    at = 1_700_000_000.0
    for c in range(conversations):
        mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None,
                                            "children": []}}
        made = turn = 0
        tip = user = "root"
        while made < per_conversation:
            turn += 1
            plan = ["user", "call", "tool", "assistant"] if turn % 5 == 0 else [
                "user", "assistant"]
            if turn % 7 == 0:
                plan.append("retry")
            for step in plan[: per_conversation - made]:
                at += 1.0
                mid = f"c{c}-t{turn}-{step}"
                made += 1
                if step == "user":
                    add_message(mapping, mid, tip, "user", f"question {turn} of {c}", at)
                    user = mid
                elif step == "call":
                    add_message(mapping, mid, tip, "assistant", f"print({turn})", at,
                                recipient="python")
                elif step == "tool":
                    add_message(mapping, mid, tip, "tool", str(turn), at, name="python")
                elif step == "assistant":
                    add_message(mapping, mid, tip, "assistant", f"answer {turn}", at)
                else:  # same text again under the same question: a retry, its own branch
                    add_message(mapping, mid, user, "assistant", f"answer {turn}", at)
                    continue
                tip = mid
        out.append({"title": f"Conversation {c}", "create_time": at, "update_time": at,
                    "mapping": mapping, "current_node": tip, "id": f"conv-{c}",
                    "conversation_id": f"conv-{c}"})
    return out


_SENTENCE = (
    "the of and to in is that it for on with as was at by be this from or have an are "
    "which not but they you were all we one can there their what so if about out more "
    "when up time into some them other than then now only its over also after use two "
    "how our work first well way even new want because any these give day most us "
    "function value return list import class module error store graph node branch"
)
_WORDS = _SENTENCE.split()


def write_chatgpt_export(path: Path, *, target_bytes: int, per_conversation: int = 500,
                         question_chars: int = 400, answer_chars: int = 12_000) -> int:
    """Write a ChatGPT-shaped `conversations.json` of about `target_bytes` straight to disk
    (never all in memory): short questions, long answers, every text different; returns how
    many messages it holds."""
    rng = random.Random(7)
    pool = " ".join(rng.choices(_WORDS, k=400_000))
    messages = 0
    with path.open("w", encoding="utf-8") as out:
        out.write("[")
        c = 0
        while out.tell() < target_bytes:
            mapping: dict[str, Any] = {"root": {"id": "root", "message": None, "parent": None,
                                                "children": []}}
            tip = "root"
            at = 1_700_000_000.0 + c * 10_000
            for i in range(per_conversation):
                role = "user" if i % 2 == 0 else "assistant"
                size = question_chars if role == "user" else answer_chars
                start = rng.randrange(len(pool) - size)
                body = f"{c}.{i} {pool[start:start + size]}"
                mid = f"c{c}-m{i}"
                at += 1.0
                add_message(mapping, mid, tip, role, body, at)
                tip = mid
            messages += per_conversation
            if c:
                out.write(",")
            json.dump({"title": f"Conversation {c}", "create_time": at, "update_time": at,
                       "mapping": mapping, "current_node": tip, "id": f"big-{c}",
                       "conversation_id": f"big-{c}"}, out)
            c += 1
        out.write("]")
    return messages
