"""Three loopback providers, each serving one priced model, and the services wired to all
three: what the tests and the benchmark of sending to several models at once share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from treechat.services.bootstrap import Services, build_services
from treechat.services.models.catalog import ModelChoice
from treechat.services.turns.beam import BeamService

from .loopback_server import LoopbackProvider

# litellm prices these, so each reply has a real cost; each is served by its own server.
MODELS = ("openai/gpt-4o-mini", "openai/gpt-4o", "openai/gpt-4.1-mini")
LABELS = ("Mini", "Omni", "Four-one")


@contextmanager
def three_servers(tokens_per_second: float | None = None) -> Iterator[list[LoopbackProvider]]:
    servers = [LoopbackProvider(tokens_per_second=tokens_per_second) for _ in MODELS]
    try:
        yield servers
    finally:
        for server in servers:
            server.stop()


@asynccontextmanager
async def beam_services(
    data_dir: Path, servers: list[LoopbackProvider]
) -> AsyncIterator[tuple[Services, BeamService]]:
    """Services on a fresh store whose models are `MODELS`, one a server, the first the
    default; closed on the way out."""
    choices = tuple(
        ModelChoice(model, label, "openai", api_base=server.openai_base)
        for model, label, server in zip(MODELS, LABELS, servers, strict=True)
    )
    built = build_services(data_dir, bundled=False, detect_local_servers=False,
                           extra_models=choices)
    built.models.default_model = MODELS[0]
    try:
        yield built, BeamService(built.chat)
    finally:
        await built.close()
        built.close_store()
