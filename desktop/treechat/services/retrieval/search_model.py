"""Which model embeds passages for search: the offline default (WordLlama, refined by the
MiniLM encoder in the background) or an embedding model the user already has (a server's, or
a GGUF of the model library), kept in the store's settings.

A chosen model replaces both offline stages: it is a sentence encoder itself, and beside it
the fine stage would do the ranking (`semantic.Meaning` ranks by the fine model) and double
the work. Its vectors are another model's, so the vector indexes, keyed by the model's name,
start afresh and are filled again by the next catch-up (chats) and re-index (knowledge).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ...providers.embeddings import Embedder, EmbedderUnavailable
from ...providers.embeddings_remote import (
    OFFLINE_LABEL,
    SearchModel,
    SearchModelKind,
    embedder_for,
    gguf_embeds,
)
from ...store.database import Store
from ...store.repository import Repository

if TYPE_CHECKING:
    from ...providers.connections import Connection
    from ..models.connections import ConnectionService
    from .engine import Progress, RetrievalEngine
    from .knowledge import IndexProgress, KnowledgeService

# what the window takes from here (it does not reach the providers)
__all__ = [
    "OFFLINE_LABEL",
    "EmbedderUnavailable",
    "SearchModel",
    "change_search_model",
    "embedding_models_of",
    "label_of",
    "offered",
    "reembed",
    "search_model_of",
]

SETTINGS_SEARCH_MODEL = "retrieval.search_model"
OFFLINE = "offline"


def saved_search_model(repo: Repository) -> SearchModel | None:
    """The chosen model (None: the offline default)."""
    return SearchModel.from_setting(repo.get_setting(SETTINGS_SEARCH_MODEL))


def save_search_model(repo: Repository, model: SearchModel | None) -> None:
    repo.set_setting(SETTINGS_SEARCH_MODEL, model.to_setting() if model else OFFLINE)


def key_of(model: SearchModel) -> str | None:
    """The model's key from the keyring (None when it needs none or none is there)."""
    if not model.key_account:
        return None
    from ...providers.keys import KeyStore

    return KeyStore().get_key(model.key_account) or None


def configured_embedder(store: Store) -> Embedder | None:
    """The embedder the settings name (None: the offline default). Reads the store."""
    model = store.call(saved_search_model)
    return None if model is None else embedder_for(model, key_of(model))


def search_model_of(embedder: Embedder) -> SearchModel | None:
    """The chosen model an engine's embedder is (None: the offline default)."""
    from ...providers.embeddings_remote import GGUFEmbedder, ServerEmbedder

    if isinstance(embedder, ServerEmbedder):
        return embedder.model
    if isinstance(embedder, GGUFEmbedder):
        return SearchModel("gguf", embedder.path.stem, str(embedder.path))
    return None


def label_of(model: SearchModel | None) -> str:
    return OFFLINE_LABEL if model is None else model.name


def offered(found: Iterable[tuple[Connection, Sequence[str]]],
            gguf_files: Sequence[Path] = ()) -> list[SearchModel]:
    """Search models of the embedding models connections offer (`embedding_models_of`) and
    of the GGUF files whose header says they embed (call off the GUI thread: it reads them)."""
    models: list[SearchModel] = []
    for conn, names in found:
        kind: SearchModelKind = "ollama" if conn.kind == "ollama" else "openai"
        base = (conn.server_root if kind == "ollama"
                else conn.api_base or "https://api.openai.com/v1")
        account = conn.key_account if (conn.has_key or conn.kind == "hosted") else ""
        models.extend(SearchModel(kind, name, base, account) for name in names)
    for path in gguf_files:
        if gguf_embeds(path):
            models.append(SearchModel("gguf", path.stem, str(path)))
    return models


async def embedding_models_of(
        connections: ConnectionService) -> list[tuple[Connection, tuple[str, ...]]]:
    """Each usable connection and the embedding models its server lists now (one that
    cannot be read offers none)."""
    import asyncio

    from ...providers.connections import ConnectionProblem
    from ...providers.model_lists import fetch_embedding_models, list_client

    wanted = [s.connection for s in connections.statuses() if s.usable]

    async def one(conn: Connection) -> tuple[Connection, tuple[str, ...]]:
        try:
            async with list_client() as client:
                return conn, await fetch_embedding_models(conn, client,
                                                          await connections.key_for(conn))
        except ConnectionProblem:
            return conn, ()

    return [f for f in await asyncio.gather(*(one(c) for c in wanted)) if f[1]]


def find_offered(name: str, choices: Iterable[SearchModel]) -> SearchModel | None:
    """The offered model called `name` (its full name, or its model id when only one has
    it)."""
    choices = list(choices)
    exact = [m for m in choices if m.name == name]
    if exact:
        return exact[0]
    by_id = [m for m in choices if m.model == name]
    return by_id[0] if len(by_id) == 1 else None


async def change_search_model(store: Store, model: SearchModel | None) -> RetrievalEngine:
    """Make `model` the search model (None: the offline default): it is asked once first, so
    a model that does not answer is refused with `EmbedderUnavailable` and nothing changes.
    Returns the engine now used, whose indexes `reembed` fills."""
    import asyncio

    from .engine import replace_engine

    embedder = None
    if model is not None:
        key = await asyncio.to_thread(key_of, model)
        embedder = embedder_for(model, key)
        await asyncio.to_thread(lambda: embedder.ndim)  # its first answer says the size
    await store.run(lambda r: save_search_model(r, model))
    return replace_engine(store, embedder)


async def reembed(store: Store, *, chats: Progress | None = None,
                  knowledge: Callable[[str, IndexProgress], None] | None = None,
                  service: KnowledgeService | None = None) -> int:
    """Embed every chat passage and every knowledge base again with the current search
    model, off the event loop (`chats(done, last slice)`, `knowledge(base, progress)` as it
    goes; `service`: the knowledge service in use, if one is). Returns the chat passages
    embedded."""
    from .engine import engine_for
    from .knowledge import KnowledgeService

    engine = engine_for(store)
    done = await engine.catch_up(progress=chats)
    if service is None or service.embedder is not engine.embedder:
        service = KnowledgeService(store, engine.embedder)
    for name in sorted(await service.bases()):
        await service.reindex(name, None if knowledge is None
                              else functools.partial(knowledge, name))
    return done
