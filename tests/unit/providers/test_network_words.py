"""A failed connection said in words a person reads, never an errno."""

from __future__ import annotations

from treechat.providers.network_words import failure_words


def test_network_failures_are_said_in_words_not_errnos() -> None:
    resolver = OSError("[Errno -2] Name or service not known")
    wrapped = RuntimeError("Max retries exceeded")
    wrapped.__cause__ = resolver
    assert failure_words(wrapped) == "no network, or its name cannot be looked up"
    assert failure_words(ConnectionRefusedError("[Errno 111] Connection refused")) == (
        "nothing answers at that address")
    assert failure_words(ValueError("a bad answer")) == "a bad answer"
