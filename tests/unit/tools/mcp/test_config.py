"""Server configurations: what users paste from Claude Desktop, Cursor and VS Code is read, a
broken entry is named and skipped, and secrets never reach the stored (public) form."""

from __future__ import annotations

import json

import pytest

from treechat.tools.mcp.config import (
    ConfigError,
    ServerConfig,
    parse_header,
    parse_servers_json,
    safe_name,
)

CLAUDE_DESKTOP = {
    "mcpServers": {
        "filesystem": {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop"],
        },
        "github": {
            "command": "docker",
            "args": ["run", "-i", "--rm", "ghcr.io/github/github-mcp-server"],
            "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret123"},
        },
    }
}

CURSOR = {
    "mcpServers": {
        "Linear Tools": {
            "url": "https://mcp.linear.app/mcp",
            "headers": {"Authorization": "Bearer t0ken"},
        },
        "old": {"url": "http://localhost:8000/sse"},
        "typed": {"type": "streamable-http", "url": "http://localhost:9000/x"},
        "off": {"command": "uvx", "args": ["mcp-server-time"], "disabled": True},
    }
}


def test_claude_desktop_servers_are_read_with_their_env() -> None:
    result = parse_servers_json(json.dumps(CLAUDE_DESKTOP))
    assert result.problems == ()
    fs, gh = result.servers
    assert (fs.name, fs.transport, fs.command) == ("filesystem", "stdio", "npx")
    assert fs.args == ("-y", "@modelcontextprotocol/server-filesystem", "/home/me/Desktop")
    assert gh.env == {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret123"}
    assert gh.policy == "ask"  # nothing runs unasked by default


def test_cursor_urls_become_http_or_sse_and_names_are_made_safe() -> None:
    result = parse_servers_json(json.dumps(CURSOR))
    by_name = {s.name: s for s in result.servers}
    assert set(by_name) == {"Linear-Tools", "old", "typed", "off"}
    assert by_name["Linear-Tools"].transport == "http"
    assert by_name["Linear-Tools"].headers == {"Authorization": "Bearer t0ken"}
    assert by_name["old"].transport == "sse"
    assert by_name["typed"].transport == "http"
    assert by_name["off"].enabled is False


def test_the_inside_of_mcpservers_pasted_alone_is_read_too() -> None:
    result = parse_servers_json(json.dumps(CLAUDE_DESKTOP["mcpServers"]))
    assert [s.name for s in result.servers] == ["filesystem", "github"]


def test_a_broken_entry_is_reported_and_the_others_kept() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "good": {"command": "uvx", "args": ["mcp-server-time"]},
                "nocommand": {"args": ["x"]},
                "badurl": {"url": "ftp://example.com"},
                "badargs": {"command": "x", "args": "not a list"},
                "weird": {"type": "carrier-pigeon", "command": "x"},
            }
        }
    )
    result = parse_servers_json(text)
    assert [s.name for s in result.servers] == ["good"]
    problems = "\n".join(result.problems)
    assert "nocommand: a stdio server needs a command" in problems
    assert "badurl: the URL must start with http://" in problems
    assert "badargs: args must be a list" in problems
    assert "weird: unknown transport 'carrier-pigeon'" in problems


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not JSON"),
        ("[1, 2]", "expected an object"),
        ('{"something": 1}', 'no "mcpServers"'),
    ],
)
def test_a_file_that_is_not_a_configuration_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_servers_json(text)


def test_the_stored_form_names_secrets_but_never_holds_them() -> None:
    config = ServerConfig(
        "web", "http", url="https://x.example/mcp", headers={"Authorization": "Bearer s3cr3t"}
    )
    public = config.public()
    assert "s3cr3t" not in json.dumps(public)
    assert public["header_names"] == ["Authorization"]
    assert ServerConfig.from_stored(public, config.secrets()) == config
    # A keyring that lost the value keeps the name, so the user sees what to enter again.
    assert ServerConfig.from_stored(public, None).headers == {"Authorization": ""}


@pytest.mark.parametrize("name", ["", "has space", "a" * 33, "-dash", "a__b", "dots.no"])
def test_bad_server_names_are_refused(name: str) -> None:
    with pytest.raises(ConfigError):
        ServerConfig(name, "stdio", command="x")


def test_safe_name_and_headers() -> None:
    assert safe_name("GitHub Tools!") == "GitHub-Tools"
    assert safe_name("...") == "server"
    assert parse_header("Authorization=Bearer a=b") == ("Authorization", "Bearer a=b")
    assert parse_header("X-Key: v") == ("X-Key", "v")
    with pytest.raises(ConfigError):
        parse_header("novalue")


def test_a_broken_entry_named_with_a_line_break_is_reported_on_one_line() -> None:
    result = parse_servers_json('{"mcpServers": {"two\\nlines": null}}')
    (problem,) = result.problems
    assert "\n" not in problem and problem.startswith('"two\\nlines": ')
