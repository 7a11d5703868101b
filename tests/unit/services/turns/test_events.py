"""The events a view redraws from: frozen, and the last event of a turn carries what changed
(none for events made without it, so older callers keep working)."""

from __future__ import annotations

import dataclasses

import pytest

from treechat.core.model import Node
from treechat.services.turns.changes import TurnChanges
from treechat.services.turns.events import TextDelta, TurnError, TurnFailed, TurnFinished


def test_events_are_frozen() -> None:
    delta = TextDelta("s", "hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        delta.text = "changed"  # type: ignore[misc]


def test_the_last_events_carry_changes_or_none() -> None:
    node = Node(id="a", seq=1, created_at=0.0, session_id="s", role="assistant")
    failed = TurnFailed("s", TurnError("busy", "wait"), None)
    assert failed.changes is None
    changes = TurnChanges("s", (node,), "a")
    finished = TurnFinished("s", node, None, changes)
    assert finished.changes is changes and finished.changes.head == "a"


def test_an_error_names_what_to_do_only_when_told() -> None:
    error = TurnError("rate_limit", "Slow down", True, retry_after=3.0, action="wait")
    assert (error.retry, error.retry_after, error.action) == (True, 3.0, "wait")
    assert TurnError("internal", "x").action == ""
