"""Fixtures shared by every test directory."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.support.loopback_server import LoopbackProvider


@pytest.fixture
def loopback() -> Iterator[LoopbackProvider]:
    """A provider on 127.0.0.1 (random port) speaking the OpenAI and Anthropic wire formats."""
    from tests.support.loopback_server import LoopbackProvider

    server = LoopbackProvider()
    try:
        yield server
    finally:
        server.stop()
