"""The offline embedder, the real WordLlama model: loaded on first use without the network,
unit rows of its stated size, texts that say the same thing closer than texts that do not,
and only a passage's beginning read."""

from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
import pytest

from treechat.providers.embeddings import (
    EMBED_CHARS,
    Embedder,
    IdleRelease,
    WordLlamaEmbedder,
)


@pytest.fixture(scope="module")
def embedder() -> WordLlamaEmbedder:
    return WordLlamaEmbedder()


def test_it_names_itself_and_loads_only_when_first_asked() -> None:
    fresh = WordLlamaEmbedder()
    assert fresh.name == "wordllama/l2_supercat-256" and fresh.ndim == 256
    assert not fresh.loaded
    as_protocol: Embedder = fresh
    assert as_protocol.ndim == 256


def test_rows_are_unit_vectors_of_the_stated_size(embedder: WordLlamaEmbedder) -> None:
    vectors = embedder.embed(["a tree has roots", "the river runs to the sea"])
    assert embedder.loaded
    assert vectors.shape == (2, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.embed([]).shape == (0, 256)


def test_meaning_is_nearer_than_other_words(embedder: WordLlamaEmbedder) -> None:
    cat, kitten, tax = embedder.embed([
        "The cat sleeps on the warm windowsill.",
        "A kitten naps in the sun by the window.",
        "Quarterly tax returns are due at the end of the month.",
    ])
    assert float(cat @ kitten) > float(cat @ tax) + 0.1


def test_only_the_beginning_of_a_long_passage_is_read(embedder: WordLlamaEmbedder) -> None:
    start = ("Gardening notes about tomatoes and soil. " * 100)[:EMBED_CHARS]
    same, longer = embedder.embed([start, start + " Stock markets and interest rates." * 50])
    assert np.allclose(same, longer)


def wait_until(done: Callable[[], bool]) -> bool:
    """Whether `done()` came true within a generous bound (a timer thread must run)."""
    deadline = time.monotonic() + 60
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)
    return done()


def test_an_idle_model_is_let_go_and_comes_back_alike() -> None:
    model = WordLlamaEmbedder()
    model.idle.seconds = 0.05
    first = model.embed(["our boat is named Marigold"])
    assert wait_until(lambda: not model.loaded)
    again = model.embed(["our boat is named Marigold"])
    assert np.allclose(first, again)


def test_a_model_in_use_is_not_let_go() -> None:
    released: list[bool] = []
    idle = IdleRelease(lambda: released.append(True), seconds=0.01)
    idle.enter()
    idle.enter()
    idle.leave()  # one use still in progress: no count starts
    time.sleep(0.1)
    assert released == []
    idle.leave()
    assert wait_until(lambda: released == [True])
