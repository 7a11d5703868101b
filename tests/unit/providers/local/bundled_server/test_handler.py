"""The bundled server's HTTP side: tool calls offered to templates that render them, held to
the end of a streamed reply and sent as one OpenAI `tool_calls` delta; errors in OpenAI's
shape."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from treechat.providers.local.bundled_model import LocalModel, find_gguf, server_command
from treechat.providers.local.bundled_server.generation import Generation
from treechat.providers.local.bundled_server.handler import ToolCalls, hold_tool_calls

# A small Hermes-style template written for these tests: tools listed in the system turn,
# tool calls and results rendered as the models trained on it expect.
TOOLS_TEMPLATE = """{%- if tools %}<|im_start|>system
You may call these tools:
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}To call one, answer <tool_call>{"name": ..., "arguments": ...}</tool_call><|im_end|>
{% endif %}{%- for message in messages %}<|im_start|>{{ message.role }}
{{ message.content or '' }}{% for call in message.tool_calls or [] %}<tool_call>
{{ {"name": call.function.name, "arguments": call.function.arguments} | tojson }}
</tool_call>{% endfor %}<|im_end|>
{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""

READ_FILE = {"type": "function", "function": {
    "name": "read_file", "description": "Read a file of the workspace",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}},
                   "required": ["path"]},
}}


def test_streamed_text_flows_and_a_tool_call_is_held_to_the_end() -> None:
    result = Generation(prompt_tokens=1)
    assert list(hold_tool_calls(iter(["Hello", ", world"]), result)) == ["Hello", ", world"]
    result = Generation(prompt_tokens=1)
    pieces = ["  <tool", "_call>\n{\"name\": \"read_file\", ", "\"arguments\": {\"path\": \"b\"}}",
              "\n</tool_call>"]
    out = list(hold_tool_calls(iter(pieces), result))
    assert len(out) == 1 and isinstance(out[0], ToolCalls)
    assert json.loads(out[0].calls[0]["function"]["arguments"]) == {"path": "b"}
    assert result.finish_reason == "tool_calls"


@pytest_asyncio.fixture
async def tool_server(tmp_path: Path) -> AsyncIterator[LocalModel]:
    template = tmp_path / "tools.jinja"
    template.write_text(TOOLS_TEMPLATE, "utf-8")
    command = [*server_command(find_gguf(), name="tooly", n_ctx=2048, threads=1,
                               parent_pid=os.getpid()), "--chat-template", str(template)]
    model = LocalModel(name="tooly", command=command)
    await model.start()
    yield model
    await model.stop()


@pytest.fixture
def http() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=120) as client:
        yield client


@pytest.mark.slow
@pytest.mark.asyncio
async def test_tools_reach_the_prompt_of_a_template_that_renders_them(
        tool_server: LocalModel, http: httpx.Client) -> None:
    root = tool_server.api_base.removesuffix("/v1")
    messages = [{"role": "user", "content": "What is in notes.txt?"}]
    plain = http.post(f"{root}/tokenize", json={"messages": messages}).json()["count"]
    with_tools = http.post(f"{root}/tokenize",
                           json={"messages": messages, "tools": [READ_FILE]}).json()["count"]
    assert with_tools > plain + 20  # the tool's name, description and schema are rendered
    reply = http.post(f"{tool_server.api_base}/chat/completions", json={
        "model": "tooly", "messages": messages, "tools": [READ_FILE], "max_tokens": 24,
        "stream": True,
    })
    assert reply.status_code == 200
    assert reply.text.rstrip().endswith("data: [DONE]")
