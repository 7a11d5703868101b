"""recall through a real turn: a long chat on a real store whose early messages were folded
into summaries, the model (the loopback provider, over HTTP through litellm) calls `recall`,
the original text comes back as the tool result in the next request, and every request stays
within the model's window."""

from __future__ import annotations

from pathlib import Path

import pytest
from tests.support.chat import Events
from tests.support.context_graph import ChainBuilder
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.dag import Change
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import TurnFailed

MODEL = "openai/loopback-small"
WINDOW = 6_000
FACT = "I never eat mushrooms, so leave them out of every recipe you suggest."


@pytest.mark.asyncio
async def test_the_model_recalls_a_folded_message(tmp_path: Path,
                                                  loopback: LoopbackProvider) -> None:
    loopback.window = WINDOW
    choice = ModelChoice(MODEL, "Loopback", "openai", api_base=loopback.openai_base,
                         window=WINDOW)
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              extra_models=(choice,))
    services.models.default_model = MODEL
    try:
        session = await services.chat.sessions.create()
        b = ChainBuilder(session_id=session.id)
        b.turn("Help me plan meals for the week.", "Gladly, tell me what you like.")
        b.turn(FACT, "Noted: no mushrooms.")
        for i in range(40):
            b.turn(f"Day {i}: what about lunch? " + "we talked about soups and breads " * 12,
                   f"For day {i}, a lentil soup. " + "it keeps well and reheats fine " * 12)
        services.store.call(lambda r: r.apply_change(session.id, Change(tuple(b.nodes), b.head),
                                                     b.now))
        loopback.reply_with_tool_calls([{"name": "recall",
                                         "arguments": {"query": "which food do I never eat"}}])
        loopback.queue(Reply(text="You never eat mushrooms."))
        events = Events()
        final = await services.chat.send(session.id, "Remind me: which food do I never eat?",
                                         on_event=events)
        assert not events.of(TurnFailed)
        assert final is not None and final.output == "You never eat mushrooms."
        first, second = loopback.requests[-2:]
        # the message had been folded into a summary in the request the model saw ...
        assert all(m.get("content") != FACT for m in first.body["messages"])
        assert "conversation-summary" in str(first.body["messages"])
        names = [t["function"]["name"] for t in first.body["tools"]]
        assert "recall" in names
        # ... and recall brought its original text back, cited by node
        (tool_message,) = [m for m in second.body["messages"] if m["role"] == "tool"]
        assert FACT in str(tool_message["content"])
        assert "node " in str(tool_message["content"])
        view = await services.chat.sessions.view(session.id)
        (node,) = [n for n in view.path if n.role == "tool"]
        assert node.name == "recall" and FACT in node.text
        assert all(r.prompt_tokens <= WINDOW for r in loopback.requests)
    finally:
        await services.close()
        services.close_store()


NOTES = b"Packing list\nthe vault code is tangerine 4417\nbring the blue folder\n"


@pytest.mark.asyncio
async def test_the_model_recalls_an_aged_attachment_by_its_text(
        tmp_path: Path, loopback: LoopbackProvider) -> None:
    import hashlib

    from treechat.core.attachments import AttachmentRef

    loopback.window = WINDOW
    choice = ModelChoice(MODEL, "Loopback", "openai", api_base=loopback.openai_base,
                         window=WINDOW)
    services = build_services(tmp_path, bundled=False, detect_local_servers=False,
                              extra_models=(choice,))
    services.models.default_model = MODEL
    try:
        session = await services.chat.sessions.create()
        notes = AttachmentRef(hashlib.sha256(NOTES).hexdigest(), "notes.txt", "text/plain",
                              len(NOTES), tokens=40)
        services.store.call(lambda r: r.put_attachment(notes.sha256, notes.media_type, NOTES,
                                                       1.0))
        b = ChainBuilder(session_id=session.id)
        b.turn("Help me get ready for the trip.", "Gladly, what do you have?")
        b.user("My packing notes are attached.", attachments=[notes.as_meta()])
        b.assistant("Thanks, I have read them.")
        for i in range(40):
            b.turn(f"Day {i}: what about lunch? " + "we talked about soups and breads " * 12,
                   f"For day {i}, a lentil soup. " + "it keeps well and reheats fine " * 12)
        services.store.call(lambda r: r.apply_change(session.id, Change(tuple(b.nodes), b.head),
                                                     b.now))
        loopback.reply_with_tool_calls([{"name": "recall",
                                         "arguments": {"query": "vault code"}}])
        loopback.queue(Reply(text="The vault code is tangerine 4417."))
        events = Events()
        final = await services.chat.send(session.id, "What was the vault code in my notes?",
                                         on_event=events)
        assert not events.of(TurnFailed)
        assert final is not None and final.output == "The vault code is tangerine 4417."
        first, second = loopback.requests[-2:]
        # the file was no longer in the request the model saw ...
        assert "tangerine" not in str(first.body["messages"])
        # ... and recall brought its text back, naming the file and its message
        (tool_message,) = [m for m in second.body["messages"] if m["role"] == "tool"]
        content = str(tool_message["content"])
        assert "the vault code is tangerine 4417" in content
        assert "its attachment notes.txt" in content
        assert all(r.prompt_tokens <= WINDOW for r in loopback.requests)
    finally:
        await services.close()
        services.close_store()
