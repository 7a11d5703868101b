"""A tool's result as the model reads it, from the SDK's own result types: text kept, images
and binary resources named with their size, structured output when there is no text, and the
error flag carried over."""

from __future__ import annotations

import base64

from mcp import types

from treechat.tools.mcp.server_state import ServerState, call_outcome, contents_text


def test_text_and_media_become_one_text_with_the_media_listed() -> None:
    png = base64.b64encode(b"\x89PNG" + b"\x00" * 296).decode()
    result = types.CallToolResult(content=[
        types.TextContent(type="text", text="Here it is:"),
        types.ImageContent(type="image", data=png, mime_type="image/png"),
    ], is_error=False)
    outcome = call_outcome(result)
    assert outcome.ok
    assert outcome.text == "Here it is:\n[image image/png, 300 bytes]"
    assert outcome.media == (("image/png", 300),)


def test_structured_output_stands_in_for_missing_text_and_errors_stay_errors() -> None:
    result = types.CallToolResult(content=[], structured_content={"b": 2, "a": 1}, is_error=True)
    outcome = call_outcome(result)
    assert not outcome.ok and outcome.text == '{"a": 1, "b": 2}'
    assert call_outcome(types.CallToolResult(content=[])).text == "(no output)"


def test_resources_are_read_as_text_or_named_with_their_size() -> None:
    text = types.TextResourceContents(uri="file:///notes.txt", text="the notes")
    assert contents_text(text) == "the notes"
    blob = types.BlobResourceContents(uri="file:///a.bin", blob=base64.b64encode(b"x" * 3000)
                                      .decode(), mime_type="application/octet-stream")
    assert contents_text(blob) == "[application/octet-stream content of file:///a.bin, 3,000 bytes]"


def test_a_new_server_is_stopped_and_offers_nothing_yet() -> None:
    state = ServerState("files")
    assert (state.status, state.tools, state.prompts, state.resources) == ("stopped", (), (), ())
