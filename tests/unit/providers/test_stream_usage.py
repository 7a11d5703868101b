"""Reading the usage a stream reports: empty usage is none, cache details are clamped to the
prompt, reasoning tokens are read, and litellm's own estimate is not taken for a measurement."""

from __future__ import annotations

from types import SimpleNamespace

from treechat.providers.stream_usage import (
    KEEP_EVERY,
    forget_streamed_chunks,
    provider_reported_usage,
    usage_from,
)


def test_empty_usage_is_none_and_cache_details_are_clamped() -> None:
    assert usage_from(None) is None
    assert usage_from({"prompt_tokens": 0, "completion_tokens": 0}) is None
    usage = usage_from(
        {
            "prompt_tokens": 100,
            "completion_tokens": 7,
            "prompt_tokens_details": {"cached_tokens": 250},
        }
    )
    assert usage is not None
    assert (usage.prompt_tokens, usage.cache_read, usage.output_tokens) == (100, 100, 7)
    assert usage.uncached_prompt_tokens == 0


def test_reasoning_and_anthropic_cache_fields_are_read_from_an_object() -> None:
    raw = SimpleNamespace(prompt_tokens=50, completion_tokens=20, cache_read_input_tokens=30,
                          cache_creation_input_tokens=10, prompt_tokens_details=None,
                          completion_tokens_details=SimpleNamespace(reasoning_tokens=12))
    usage = usage_from(raw)
    assert usage is not None
    assert (usage.cache_read, usage.cache_write, usage.reasoning_tokens) == (30, 10, 12)
    assert usage.uncached_prompt_tokens == 10


def test_usage_counts_as_measured_only_when_a_chunk_carried_it() -> None:
    assert provider_reported_usage(object())  # not a stream wrapper: taken as given
    estimated = SimpleNamespace(chunks=[SimpleNamespace(usage=None), SimpleNamespace()])
    assert not provider_reported_usage(estimated)
    measured = SimpleNamespace(chunks=[SimpleNamespace(usage=None), SimpleNamespace(usage={})])
    assert provider_reported_usage(measured)


def test_a_long_streams_chunks_are_let_go_but_what_is_read_of_them_stays() -> None:
    first = SimpleNamespace(usage=None, id="first")
    counted = SimpleNamespace(usage={"prompt_tokens": 9})
    rest = [SimpleNamespace(usage=None) for _ in range(KEEP_EVERY)]
    stream = SimpleNamespace(chunks=[first, *rest[:10], counted, *rest[10:]])
    forget_streamed_chunks(stream)
    assert stream.chunks == [first, counted, *rest[-2:]]
    assert provider_reported_usage(stream)
    short = SimpleNamespace(chunks=rest[:5])
    forget_streamed_chunks(short)
    assert short.chunks == rest[:5]  # a short stream is left as it is
    forget_streamed_chunks(object())  # not a stream wrapper: nothing to do
