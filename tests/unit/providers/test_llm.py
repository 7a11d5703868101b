"""litellm loads lazily, off the calling thread and offline; model facts and prices."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from treechat.providers import llm

ROOT = Path(__file__).resolve().parents[3]

OFFLINE_CHILD = textwrap.dedent("""
    import asyncio, json, os, socket, sys, threading
    attempts = []

    def refuse(*args, **kwargs):
        attempts.append(repr(args[1:] if args else kwargs)[:80])
        raise ConnectionRefusedError("outbound connections are refused in this test")

    def no_dns(host, *args, **kwargs):
        attempts.append(f"dns {host}")
        raise socket.gaierror("no network in this test")

    socket.socket.connect = refuse
    socket.socket.connect_ex = refuse
    socket.create_connection = refuse
    socket.getaddrinfo = no_dns
    os.environ.pop("LITELLM_LOCAL_MODEL_COST_MAP", None)
    os.environ.pop("TIKTOKEN_CACHE_DIR", None)

    from treechat.providers import llm
    after_module = "litellm" in sys.modules
    future = llm.start_warmup()
    started_in_background = not future.done()
    warmup_threads = [t.name for t in threading.enumerate() if t.name == "treechat-litellm-warmup"]
    litellm = asyncio.run(llm.ensure_loaded())
    window = llm.model_window("anthropic/claude-sonnet-4-5")
    tokens = llm.count_text_tokens("openai/gpt-4o", "hello offline world")
    print(json.dumps({
        "litellm_imported_with_module": after_module,
        "started_in_background": started_in_background,
        "warmup_threads": warmup_threads,
        "attempts": attempts,
        "suppress_debug_info": litellm.suppress_debug_info,
        "cost_map_env": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP"),
        "tiktoken_dir": os.environ.get("TIKTOKEN_CACHE_DIR"),
        "window": window,
        "tokens": tokens,
    }))
""")


def test_import_and_warmup_need_no_network_and_run_off_the_calling_thread() -> None:
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE_CHILD],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["attempts"] == []
    assert report["litellm_imported_with_module"] is False
    assert report["started_in_background"] is True
    assert report["warmup_threads"] == ["treechat-litellm-warmup"]
    assert report["suppress_debug_info"] is True
    assert report["cost_map_env"] == "True"
    tokenizers = Path(report["tiktoken_dir"])
    assert tokenizers.name == "tokenizers" and tokenizers.parent.name == "litellm_core_utils"
    # cl100k_base as tiktoken caches it, so counting works on a machine that never went online
    assert (tokenizers / "9b5ad71b2ce5302211f9c61530b329a4922fc6a4").is_file()
    assert report["window"] == 200_000
    assert report["tokens"] > 0


def test_model_window_reads_litellm_and_falls_back_small_for_unknown_models() -> None:
    assert llm.model_window("openai/gpt-4o") == 128_000
    assert llm.model_window("anthropic/claude-sonnet-4-5") == 200_000
    assert llm.model_window("openai/some-local-gguf") == llm.FALLBACK_WINDOW == 8192
    assert llm.max_output_tokens("openai/gpt-4o") == 16_384
    assert llm.max_output_tokens("openai/some-local-gguf") == llm.FALLBACK_MAX_OUTPUT


def test_is_anthropic() -> None:
    assert llm.is_anthropic("anthropic/claude-sonnet-4-5")
    assert llm.is_anthropic("claude-3-5-haiku-latest")
    assert llm.is_anthropic("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0")
    assert not llm.is_anthropic("openai/gpt-4o")
    assert not llm.is_anthropic("openrouter/openai/gpt-4o")
    # OpenRouter passes Claude's breakpoints on (litellm keeps them for claude models there).
    assert llm.is_anthropic("openrouter/anthropic/claude-sonnet-4.5")
    # A name that mentions claude on a host that does not serve Anthropic's models is not.
    assert not llm.is_anthropic("ollama_chat/claude-distill-7b")
    assert not llm.is_anthropic("ollama_chat/llama3.2")
    assert not llm.is_anthropic("bedrock/meta.llama3-70b-instruct-v1:0")


def test_cost_prices_cache_reads_and_writes_from_the_total() -> None:
    litellm = llm.litellm_module()
    info = litellm.get_model_info("anthropic/claude-sonnet-4-5")
    total, read, write, out = 10_000, 6_000, 2_000, 300
    expected = (
        (total - read - write) * info["input_cost_per_token"]
        + read * info["cache_read_input_token_cost"]
        + write * info["cache_creation_input_token_cost"]
        + out * info["output_cost_per_token"]
    )
    cost = llm.request_cost("anthropic/claude-sonnet-4-5", total, out, read, write)
    assert cost.priced
    assert cost.usd == pytest.approx(expected)
    uncached = llm.reservation_cost("anthropic/claude-sonnet-4-5", total, out)
    assert uncached.usd == pytest.approx(
        total * info["input_cost_per_token"] + out * info["output_cost_per_token"]
    )
    assert uncached.usd > cost.usd  # reservations never assume a cache hit


def test_over_reported_cache_details_are_clamped_never_negative() -> None:
    assert llm.clamp_cache_details(1000, 1500, 300) == (1000, 0)
    assert llm.clamp_cache_details(1000, 700, 600) == (700, 300)
    assert llm.clamp_cache_details(1000, -5, -1) == (0, 0)
    wild = llm.request_cost("openai/gpt-4o", 1000, 10, cache_read=50_000, cache_write=50_000)
    all_cached = llm.request_cost("openai/gpt-4o", 1000, 10, cache_read=1000)
    assert wild.usd == pytest.approx(all_cached.usd)
    assert wild.usd > 0


def test_unpriced_models_cost_nothing_and_say_so() -> None:
    cost = llm.request_cost("openai/my-local-gguf", 5000, 200, cache_read=100)
    assert cost == llm.Cost(0.0, priced=False)


def test_litellms_parsed_anthropic_tokenizer_is_let_go_of_and_claude_is_still_counted() -> None:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent("""
            import json, sys
            from treechat.providers import llm
            litellm = llm.litellm_module()
            utils = sys.modules["litellm.utils"]
            print(json.dumps({"kept": hasattr(utils, "json_data"),
                              "counted": llm.count_text_tokens(
                                  "anthropic/claude-3-5-sonnet-20241022", "hello there world")}))
        """)],
        check=False, capture_output=True, text=True, timeout=240, cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["kept"] is False
    assert report["counted"] > 0


def test_a_model_priced_at_nothing_is_priced_at_zero_as_its_requests_are() -> None:
    """litellm's table prices codestral-latest at $0: the per-million price (what the
    picker shows) and a request's cost agree that it is priced, at nothing."""
    model = "codestral/codestral-latest"
    assert llm.price_per_million(model) == (0.0, 0.0)
    for cost in (llm.reservation_cost(model, 1000, 100), llm.request_cost(model, 1000, 100)):
        assert cost.priced and cost.usd == 0
    assert llm.price_per_million("openai/no-such-model-anywhere") is None


DEFAULT_ENCODING_CHILD = textwrap.dedent("""
    import asyncio, json, sys
    from tests.support.loopback_server import LoopbackProvider, Reply
    from treechat.providers import llm
    from treechat.providers.tokenizer import TiktokenCounter

    server = LoopbackProvider()
    server.queue(Reply(text="a streamed reply of several words"))
    litellm = llm.litellm_module()
    default = sys.modules["litellm.litellm_core_utils.default_encoding"].encoding

    async def stream():
        pieces = []
        response = await litellm.acompletion(
            model="openai/gpt-4o-mini", api_base=server.openai_base, api_key="sk-test",
            messages=[{"role": "user", "content": "hi"}], stream=True)
        async for chunk in response:
            pieces.append(chunk.choices[0].delta.content or "")
        await llm.aclose_clients()
        return "".join(pieces)

    try:
        reply = asyncio.run(stream())
        after_stream = default.loaded
        text = "litellm still counts with its default tables when asked"
        counted = litellm.token_counter(text=text)  # no model: litellm's default encoding
        print(json.dumps({
            "reply": reply, "loaded_after_stream": after_stream,
            "same_object_in_main": sys.modules["litellm.main"].encoding is default,
            "counted": counted, "cl100k": TiktokenCounter("cl100k_base").count(text),
            "loaded_after_count": default.loaded}))
    finally:
        server.stop()
""")


def test_a_streamed_openai_request_never_loads_litellms_default_tables() -> None:
    done = subprocess.run([sys.executable, "-c", DEFAULT_ENCODING_CHILD], check=False,
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["reply"] == "a streamed reply of several words"
    # 40 MB of cl100k tables a gpt-4o request never reads stay on disk...
    assert report["loaded_after_stream"] is False
    assert report["same_object_in_main"] is True
    # ...and load, the same tables, the moment litellm really counts with them
    assert report["counted"] == report["cl100k"] > 0
    assert report["loaded_after_count"] is True
