"""The bundled server's model, loaded in this process: exact prompt counts, the window it
refuses to overflow, and stop sequences that never reach the client."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from treechat.providers.local.bundled_model import find_gguf
from treechat.providers.local.bundled_server.generation import Engine, Generation
from treechat.providers.local.bundled_server.messages import RequestError

HELLO = [{"role": "user", "content": "Count from one to ten."}]


@pytest.fixture(scope="module")
def engine() -> Iterator[Engine]:
    yield Engine(str(find_gguf()), n_ctx=512, n_threads=1, name="tiny")


def test_usage_and_timings_add_up() -> None:
    result = Generation(prompt_tokens=7, completion_tokens=3, generate_seconds=0.5)
    assert result.usage() == {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}
    assert result.timings()["predicted_per_second"] == 6.0
    assert Generation(prompt_tokens=1).timings()["predicted_per_second"] == 0.0


def test_the_window_is_the_one_asked_for_and_the_prompt_is_counted_exactly(
        engine: Engine) -> None:
    assert engine.n_ctx == 512 and engine.meta()["n_ctx"] == 512
    tokens = engine.prompt_tokens(HELLO)
    assert len(tokens) > len(engine.tokenize_text("Count from one to ten."))
    assert engine.check_window(len(tokens), None) == 512 - len(tokens)
    assert engine.check_window(len(tokens), 20) == 20


def test_a_request_larger_than_the_window_is_refused_in_openai_words(engine: Engine) -> None:
    with pytest.raises(RequestError) as caught:
        engine.check_window(500, 100)
    error = caught.value.body["error"]
    assert error["code"] == "context_length_exceeded"
    assert "maximum context length is 512 tokens" in error["message"]
    with pytest.raises(RequestError):
        engine.check_window(512, None)


def test_generation_stops_at_the_limit_and_counts_what_it_wrote(engine: Engine) -> None:
    tokens = engine.prompt_tokens(HELLO)
    result = Generation(prompt_tokens=len(tokens))
    text = "".join(engine.generate(tokens, 5, {"temperature": 0.0}, (), result))
    assert text and result.completion_tokens == 5 and result.finish_reason == "length"
    assert engine.last is result


def test_a_stop_sequence_ends_the_reply_and_is_never_sent(engine: Engine) -> None:
    tokens = engine.prompt_tokens(HELLO)
    whole = "".join(engine.generate(tokens, 40, {"temperature": 0.0, "seed": 1}, (),
                                    Generation(len(tokens))))
    stop = whole.strip().split()[1]  # a word the greedy reply is known to write
    result = Generation(prompt_tokens=len(tokens))
    cut = "".join(engine.generate(tokens, 40, {"temperature": 0.0, "seed": 1}, (stop,), result))
    assert stop not in cut and whole.startswith(cut)
    assert result.finish_reason == "stop"
