"""Embedding models on servers, over real HTTP on 127.0.0.1: both wire formats give unit
rows in the order asked, the size learned from the first answer, names distinct per server and
model; a server that stalls, floods or refuses gives one line, not a hang; a GGUF is offered
only when llama_cpp loads it."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from tests.support.embedding_server import EmbeddingServer, bag_of_words, embedding_server

from treechat.core.bounded_read import Bounds
from treechat.providers.embeddings import EmbedderUnavailable
from treechat.providers.embeddings_remote import (
    SearchModel,
    ServerEmbedder,
    embedder_for,
    gguf_embeds,
)
from treechat.providers.local.bundled_model import find_gguf


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with embedding_server() as s:
        yield s


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_both_wire_formats_give_unit_rows_in_the_order_asked(server: EmbeddingServer,
                                                             kind: str) -> None:
    base = server.url + ("/v1" if kind == "openai" else "")
    embedder = embedder_for(SearchModel(kind, "nomic-embed-text", base))  # type: ignore[arg-type]
    texts = ["the boat is named Marigold", "a recipe for bread", "Marigold boat"]
    vectors = embedder.embed(texts)
    assert vectors.shape == (3, 512) and embedder.ndim == 512
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    expected = np.asarray(bag_of_words(texts[1]), dtype=np.float32)
    assert np.allclose(vectors[1], expected / np.linalg.norm(expected), atol=1e-5)
    assert float(vectors[0] @ vectors[2]) > float(vectors[0] @ vectors[1])
    assert server.requests[-1]["path"] == ("/v1/embeddings" if kind == "openai"
                                          else "/api/embed")


def test_many_passages_go_in_batches(server: EmbeddingServer) -> None:
    embedder = ServerEmbedder(SearchModel("ollama", "m", server.url), batch=10)
    assert embedder.embed([f"passage {i}" for i in range(25)]).shape == (25, 512)
    assert [len(r["input"]) for r in server.requests] == [10, 10, 5]


def test_names_are_stable_and_distinct_per_server_and_model() -> None:
    a = SearchModel("ollama", "nomic-embed-text", "http://127.0.0.1:11434")
    assert a.name == "ollama:nomic-embed-text@127.0.0.1:11434"
    assert len({a.name, SearchModel("ollama", "bge-m3", a.base_url).name,
                SearchModel("openai", "nomic-embed-text", "http://127.0.0.1:1234/v1").name,
                SearchModel("ollama", "nomic-embed-text", "http://10.0.0.2:11434").name}) == 4
    assert SearchModel.from_setting(a.to_setting()) == a
    assert SearchModel.from_setting(None) is None
    assert SearchModel.from_setting({"kind": "other", "model": "x"}) is None


@pytest.mark.parametrize("behaviour,said", [("stall", "longer than 1 s"),
                                            ("huge", "larger than 1 MB"),
                                            ("error", "HTTP 404")])
def test_a_bad_server_is_one_line_not_a_hang(server: EmbeddingServer, behaviour: str,
                                             said: str) -> None:
    server.behaviour = behaviour  # type: ignore[assignment]
    embedder = ServerEmbedder(SearchModel("openai", "m", server.url),
                              bounds=Bounds(cap=1024 * 1024, deadline=1.0))
    with pytest.raises(EmbedderUnavailable) as caught:
        embedder.embed(["anything"])
    assert said in str(caught.value) and "\n" not in str(caught.value)


def test_no_server_is_one_line() -> None:
    embedder = embedder_for(SearchModel("ollama", "m", "http://127.0.0.1:9"))
    with pytest.raises(EmbedderUnavailable, match="did not answer"):
        embedder.embed(["anything"])


def _string(text: str) -> bytes:
    return struct.pack("<Q", len(text)) + text.encode()


def test_a_gguf_is_offered_when_its_header_says_it_embeds(tmp_path: Path) -> None:
    bert = tmp_path / "bge-small.gguf"
    bert.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2)
                     + _string("general.architecture") + struct.pack("<I", 8) + _string("bert")
                     + _string("bert.pooling_type") + struct.pack("<I", 4)
                     + struct.pack("<I", 2))
    assert gguf_embeds(bert)  # llama_cpp is installed here
    assert not gguf_embeds(find_gguf())  # the bundled chat model does not embed
    garbage = tmp_path / "not-a-model.gguf"
    garbage.write_bytes(b"PK\x03\x04")
    assert not gguf_embeds(garbage)
    # a header alone is no model: choosing it is refused in one line
    with pytest.raises(EmbedderUnavailable, match=r"could not load bge-small\.gguf") as caught:
        embedder_for(SearchModel("gguf", "bge-small", str(bert))).embed(["x"])
    assert "\n" not in str(caught.value)


def test_llama_cpp_embeds_with_a_real_gguf() -> None:
    # No embedding GGUF ships with the tests; the bundled chat model, loaded for embeddings,
    # exercises the same path (its token vectors are pooled here).
    embedder = embedder_for(SearchModel("gguf", "smol", str(find_gguf())))
    vectors = embedder.embed(["the heron nests by the river", "invoices are due monthly"])
    assert vectors.shape == (2, embedder.ndim) and embedder.ndim == 576
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert embedder.name == f"gguf:{find_gguf().name}"
