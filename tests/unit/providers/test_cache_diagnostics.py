"""CTX-007: the earliest divergence between consecutive requests of one scope, off by default."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from treechat.providers.cache_diagnostics import CacheDiagnostics, earliest_divergence, fingerprint


def words(text: str) -> int:
    return len(text.split())


SYSTEM = {"role": "system", "content": "You are terse. " * 20}
TOOLS = [{"type": "function", "function": {"name": "read", "description": "read a file " * 10}}]


def convo(*texts: str) -> list[dict[str, Any]]:
    return [SYSTEM] + [
        {"role": "user" if i % 2 == 0 else "assistant", "content": t} for i, t in enumerate(texts)
    ]


def observe(
    diag: CacheDiagnostics,
    messages: list[dict[str, Any]],
    tools: list[dict[str, Any]] = TOOLS,
    **kw: Any,
) -> Any:
    args: dict[str, Any] = {
        "session_id": "s1",
        "phase": "chat",
        "model": "anthropic/claude-sonnet-4-5",
    }
    args.update(kw)
    return diag.observe(messages=messages, tools=tools, count=words, **args)


def test_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TREECHAT_CACHE_DIAGNOSTICS", raising=False)
    diag = CacheDiagnostics()
    assert not diag.enabled
    observe(diag, convo("a b c"))
    assert observe(diag, convo("x y z")) is None
    monkeypatch.setenv("TREECHAT_CACHE_DIAGNOSTICS", "1")
    assert CacheDiagnostics().enabled


def test_an_extended_conversation_does_not_diverge() -> None:
    diag = CacheDiagnostics(enabled=True)
    assert observe(diag, convo("hello there")) is None
    assert observe(diag, convo("hello there", "hi", "next question")) is None


def test_reports_the_earliest_changed_message_with_the_tokens_behind_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    diag = CacheDiagnostics(enabled=True)
    observe(diag, convo("one two", "three four five", "six seven eight nine"))
    with caplog.at_level(logging.INFO, logger="treechat.providers.cache"):
        found = observe(diag, convo("one two", "THREE four five", "six seven eight nine", "ten"))
    assert found is not None
    assert (found.part, found.index) == ("message", 1)
    previous = fingerprint(
        "m", convo("one two", "three four five", "six seven eight nine"), TOOLS, words
    )
    assert found.tokens == sum(previous.message_tokens[1:])
    assert "message 1 changed" in caplog.text and "session=s1 phase=chat" in caplog.text


def test_model_tools_and_system_changes_are_named() -> None:
    diag = CacheDiagnostics(enabled=True)
    base = convo("hello")
    observe(diag, base)
    assert observe(diag, base, model="openai/gpt-4o").part == "model"
    tools = [*TOOLS, {"type": "function", "function": {"name": "write"}}]
    assert observe(diag, base, model="openai/gpt-4o", tools=tools).part == "tools"
    changed = [{"role": "system", "content": "Now verbose."}, *base[1:]]
    found = observe(diag, changed, model="openai/gpt-4o", tools=tools)
    assert found.part == "system" and found.tokens > 0


def test_moving_a_cache_mark_is_not_a_divergence() -> None:
    previous = fingerprint(
        "m",
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}],
            }
        ],
        [],
        words,
    )
    current = fingerprint(
        "m", [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], [], words
    )
    assert earliest_divergence(previous, current) is None


def test_scopes_are_kept_apart_by_phase_and_lineage() -> None:
    diag = CacheDiagnostics(enabled=True)
    observe(diag, convo("plan the work"), phase="planner")
    assert observe(diag, convo("step one"), phase="worker:s1") is None  # another phase
    assert (
        observe(diag, convo("a different conversation"), phase="planner") is None
    )  # another lineage
    assert observe(diag, convo("plan the work", "ok", "more"), phase="planner") is None
