"""A connection's own rules: the addresses it accepts, how its models are named and routed,
and what it keeps in the store."""

from __future__ import annotations

import pytest

from treechat.providers.connections import (
    Connection,
    ConnectionModel,
    ConnectionProblem,
    connection_id,
    default_openai_base,
    display_name,
    is_loopback,
    parse_base_url,
    parse_headers,
    split_address,
)


def test_addresses_are_tidied_or_refused_with_a_reason() -> None:
    assert parse_base_url(" HTTP://127.0.0.1:8000/v1/ ") == "http://127.0.0.1:8000/v1"
    assert default_openai_base("http://127.0.0.1:8000") == "http://127.0.0.1:8000/v1"
    assert default_openai_base("https://api.example.org/openai/v1") == (
        "https://api.example.org/openai/v1"
    )
    for bad, why in [
        ("ws://127.0.0.1:1", "not an http"),
        ("http:///v1", "no host"),
        ("http://127.0.0.1:1/v1?key=x", "query"),
        ("http://127.0.0.1:port/", "invalid port"),
        ("http://u:p@127.0.0.1:1", "user name or password"),
    ]:
        with pytest.raises(ConnectionProblem, match=why):
            parse_base_url(bad)
    assert is_loopback("http://127.0.0.2:1") and is_loopback("http://[::1]:1")
    assert not is_loopback("http://10.0.0.1:1") and not is_loopback("http://example.com")


def test_names_become_ids_and_addresses_split_on_the_first_slash() -> None:
    assert connection_id(" My Lab ") == "my-lab"
    with pytest.raises(ConnectionProblem):
        connection_id("a/b")
    assert split_address("openrouter/anthropic/claude-sonnet-4.5") == (
        "openrouter", "anthropic/claude-sonnet-4.5"
    )
    assert split_address("ollama_chat/llama3.2") == ("ollama", "llama3.2")
    with pytest.raises(ConnectionProblem, match="CONNECTION/MODEL"):
        split_address("gpt-4o")


def test_each_kind_routes_to_its_litellm_id_and_base() -> None:
    lm = Connection("lmstudio", "lmstudio", base_url="http://127.0.0.1:1234")
    assert (lm.api_base, lm.litellm_model("qwen")) == ("http://127.0.0.1:1234/v1", "openai/qwen")
    ollama = Connection("ollama", "ollama", base_url="http://127.0.0.1:11434",
                        models=(ConnectionModel("llama3.2:latest"),))
    assert ollama.litellm_model("llama3.2") == "ollama_chat/llama3.2"
    assert ollama.model("llama3.2") == ConnectionModel("llama3.2:latest")
    hosted = Connection("work", "hosted", provider="openai")
    assert hosted.litellm_model("gpt-4o") == "openai/gpt-4o"
    assert hosted.key_account == "connection:work"
    assert Connection("openai", "hosted", provider="openai").key_account == "openai"
    assert [m.name for m in hosted.offered()] == ["gpt-4.1", "gpt-4o", "gpt-4o-mini"]


def test_a_record_round_trips_and_never_holds_a_key() -> None:
    conn = Connection("lab", "openai-compatible", "Lab", "http://127.0.0.1:8000/v1",
                      headers=(("X-Team", "blue"),), models=(ConnectionModel("m", 4096),),
                      has_key=True, timeout=30.0)
    record = conn.to_record()
    assert Connection.from_record(record) == conn
    assert set(record) == {"id", "kind", "label", "base_url", "headers", "models", "has_key",
                           "timeout"}
    with pytest.raises(ConnectionProblem, match="unknown connection kind"):
        Connection.from_record({"id": "x", "kind": "telnet"})


def test_extra_headers_are_checked_and_a_key_is_never_one() -> None:
    assert parse_headers(["X-Team:  blue ", "X-Other: a:b"]) == (
        ("X-Team", "blue"), ("X-Other", "a:b")
    )
    for bad in ("no colon", ": empty name", "Authorization: Bearer x"):
        with pytest.raises(ConnectionProblem):
            parse_headers([bad])
    # a line break in a value would become a header line of the value's making
    for bad in ("X-A: a\r\nX-Evil: 1", "X-A: a\nb", "X-A: a\x00"):
        with pytest.raises(ConnectionProblem, match="a line break or another control"):
            parse_headers([bad])
    assert parse_headers(["X-A: tab\tinside"]) == (("X-A", "tab\tinside"),)


def test_display_names_use_the_labels_the_user_gave() -> None:
    assert display_name("lab/qwen2.5", {"lab": "My lab"}) == "My lab · qwen2.5"
    assert display_name("llamacpp/gemma-3-1b") == "llama.cpp · gemma-3-1b"
    assert display_name("lmstudio/qwen") == "LM Studio · qwen"


@pytest.mark.parametrize("url", [
    "http://127.0.0.1:8000/v1\r\nX-Evil: 1",
    "http://127.0.0.1:8000/v1\nX-Evil: 1",
    "http://127.0.0.1:8000/v1 X-Evil",
    "http://127.0.0.1:8000/v1\x00",
])
def test_an_address_with_a_line_break_or_control_character_is_refused(url: str) -> None:
    """Kept, it would become a header line of every request."""
    with pytest.raises(ConnectionProblem, match="a line break or another control character"):
        parse_base_url(url)
