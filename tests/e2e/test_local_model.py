"""The bundled model end to end: a real streamed turn through litellm, and no orphan process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import AsyncIterator
from typing import Any

import httpx
import psutil
import pytest
import pytest_asyncio
from tests.support.processes import gone

from treechat.providers.local.bundled_model import LocalModel

pytestmark = pytest.mark.slow


def litellm_module() -> Any:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm

    litellm.suppress_debug_info = True
    return litellm


@pytest_asyncio.fixture
async def model() -> AsyncIterator[LocalModel]:
    m = LocalModel()
    await m.start()
    yield m
    await m.stop()


@pytest.mark.asyncio
async def test_a_real_streamed_turn_through_litellm(model: LocalModel) -> None:
    litellm = litellm_module()
    messages = [{"role": "user", "content": "What is the capital of France?"}]
    response = await litellm.acompletion(
        model=model.model_id,
        api_base=model.api_base,
        api_key=model.api_key,
        messages=messages,
        stream=True,
        max_tokens=16,
        stream_options={"include_usage": True},
    )
    pieces: list[str] = []
    usage = None
    async for chunk in response:
        if chunk.choices and chunk.choices[0].delta.content:
            pieces.append(chunk.choices[0].delta.content)
        if getattr(chunk, "usage", None):
            usage = chunk.usage
    text = "".join(pieces)
    assert text.strip()
    assert len(pieces) > 1  # streamed, not delivered in one piece
    assert usage is not None
    root = model.api_base.removesuffix("/v1")
    counted = httpx.post(f"{root}/tokenize", json={"messages": messages}, trust_env=False)
    assert usage.prompt_tokens == counted.json()["count"]
    assert 0 < usage.completion_tokens <= 16


@pytest.mark.asyncio
async def test_overflow_is_recognised_by_litellm(model: LocalModel) -> None:
    litellm = litellm_module()
    with pytest.raises(litellm.ContextWindowExceededError):
        await litellm.acompletion(
            **model.completion_kwargs(),
            messages=[{"role": "user", "content": "word " * (model.window + 10)}],
            max_tokens=4,
            num_retries=0,
        )


PARENT = textwrap.dedent(
    """
    import asyncio, sys, time
    from treechat.providers.local.bundled_model import LocalModel

    async def main(mode):
        model = LocalModel()
        await model.start()
        print(model.pid, flush=True)
        if mode == "stop":
            await model.stop()
        elif mode == "hang":
            time.sleep(3600)
        # mode "exit": leave without stopping; interpreter exit must still end the child.

    asyncio.run(main(sys.argv[1]))
    """
)


def run_parent(mode: str) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, mode], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    line = parent.stdout.readline()
    assert line.strip().isdigit(), f"parent did not report a server pid: {line!r}"
    server_pid = int(line)
    assert psutil.Process(server_pid).ppid() == parent.pid
    parent.stdout.close()
    return parent, server_pid


@pytest.mark.parametrize("mode", ["stop", "exit"])
def test_no_child_left_after_the_app_exits(mode: str) -> None:
    parent, server_pid = run_parent(mode)
    assert parent.wait(timeout=60) == 0
    assert gone(server_pid)


def test_no_child_left_after_the_app_is_killed() -> None:
    parent, server_pid = run_parent("hang")
    assert psutil.Process(server_pid).is_running()
    # SIGKILL on POSIX, TerminateProcess on Windows: the app gets no chance to clean up.
    parent.kill()
    assert parent.wait(timeout=10) != 0
    assert gone(server_pid)
