"""The services wired to the loopback provider, and a recorder for the events a turn emits:
what the service tests that run real chat turns share."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TypeVar

from treechat.core.clock import SYSTEM_CLOCK, Clock
from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.events import TextDelta, TurnEvent

from .loopback_server import LoopbackProvider

LOOPBACK_MODEL = "openai/loopback-model"

E = TypeVar("E")


@asynccontextmanager
async def loopback_services(
    data_dir: Path, provider: LoopbackProvider, *, clock: Clock = SYSTEM_CLOCK
) -> AsyncIterator[Services]:
    """Services on a fresh store in `data_dir` whose default model is served by `provider`;
    closed (turns, then the store) on the way out."""
    choice = ModelChoice(LOOPBACK_MODEL, "Loopback", "openai", api_base=provider.openai_base)
    built = build_services(data_dir, bundled=False, detect_local_servers=False,
                           extra_models=(choice,), clock=clock)
    built.models.default_model = LOOPBACK_MODEL
    try:
        yield built
    finally:
        await built.close()
        built.close_store()


class Events(list[TurnEvent]):
    """An `on_event` sink that keeps every event, in order."""

    def __call__(self, event: TurnEvent) -> None:
        self.append(event)

    def text(self) -> str:
        return "".join(e.text for e in self if isinstance(e, TextDelta))

    def of(self, kind: type[E]) -> list[E]:
        return [e for e in self if isinstance(e, kind)]
