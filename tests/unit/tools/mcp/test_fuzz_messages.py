"""What an MCP server or its configuration hands Treechat, however broken, gives a result or
one line, never a traceback, within a memory bound: a pasted `mcpServers` configuration of
any shape (nested thousands deep, cut short, noise in it), and a tool's result of any
content the protocol admits (text, images, resources, links, unknown kinds, structured
output, an error flag)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp.types import CallToolResult
from pydantic import ValidationError
from tests.support.fuzz_values import damaged_json_bytes, json_values
from tests.support.peak_memory import peak_rss_mb

from treechat.tools.mcp.config import ConfigError, parse_servers_json
from treechat.tools.mcp.runtime import CallOutcome, call_outcome

MEMORY_BOUND_MB = 150
CONFIG = {"mcpServers": {
    "files": {"command": "npx", "args": ["-y", "@scope/server-files", "/tmp"],
              "env": {"TOKEN": "t"}},
    "web": {"url": "http://127.0.0.1:9/mcp", "headers": {"Authorization": "Bearer x"}},
}}


@pytest.fixture(scope="module", autouse=True)
def within_memory_bound() -> Iterator[None]:
    before = peak_rss_mb()
    yield
    assert peak_rss_mb() - before <= MEMORY_BOUND_MB


@settings(max_examples=100, deadline=None)
@given(body=damaged_json_bytes(CONFIG))
def test_a_pasted_configuration_of_any_shape_gives_servers_or_one_line(body: bytes) -> None:
    try:
        parsed = parse_servers_json(body.decode("utf-8", "replace"))
    except ConfigError as exc:
        assert str(exc) and "\n" not in str(exc).strip()
        return
    assert all(isinstance(p, str) and "\n" not in p for p in parsed.problems)


blocks = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=30)}),
    st.fixed_dictionaries({"type": st.sampled_from(["image", "audio"]),
                           "data": st.text("ABCDabcd0123+/=", max_size=40),
                           "mimeType": st.text(max_size=12)}),
    st.fixed_dictionaries({"type": st.just("resource"), "resource": st.one_of(
        st.fixed_dictionaries({"uri": st.just("note://a"), "text": st.text(max_size=20)}),
        st.fixed_dictionaries({"uri": st.just("file:///b"), "blob": st.text("QUJD", max_size=20)}),
    )}),
    st.fixed_dictionaries({"type": st.just("resource_link"), "uri": st.just("note://c"),
                           "name": st.text(max_size=10)}),
    st.dictionaries(st.text(max_size=8), json_values, max_size=4),
)


@settings(max_examples=100, deadline=None)
@given(content=st.lists(blocks, max_size=6), structured=st.none() | st.dictionaries(
    st.text(max_size=8), json_values, max_size=4), is_error=st.booleans())
def test_a_tool_result_of_any_content_becomes_text_for_the_model(
    content: list[object], structured: object, is_error: bool
) -> None:
    try:
        result = CallToolResult.model_validate(
            {"content": content, "structuredContent": structured, "isError": is_error})
    except ValidationError:
        return  # the SDK refuses it before Treechat sees it: a failed call, said in one line
    outcome = call_outcome(result)
    assert isinstance(outcome, CallOutcome) and outcome.text
    assert outcome.ok is not is_error
