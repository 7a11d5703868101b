"""`treechat mcp`: a server's command line after `--` kept whole (options and all), a server
switched on and off in every chat or in one, a tool's results protected from aging, and a
server given neither a command nor a URL refused in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.support.cli_runner import seed_chats, treechat

from treechat.cli.mcp import split_command_tail

NO_KEYCHAIN = {"PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring"}


def test_the_words_after_the_dashes_are_the_servers_command() -> None:
    words, command = split_command_tail(["mcp", "add", "fs", "--allow", "--", "npx", "-y",
                                         "server", "--root", "/tmp"])
    assert words == ["mcp", "add", "fs", "--allow"]
    assert command == ["npx", "-y", "server", "--root", "/tmp"]
    assert split_command_tail(["send", "s", "--", "text"]) == (["send", "s", "--", "text"],
                                                               None)
    assert split_command_tail(["mcp", "list"]) == (["mcp", "list"], None)


def test_a_server_on_and_off_in_every_chat_or_one_and_a_protected_tool(tmp_path: Path) -> None:
    (chat,) = seed_chats(tmp_path, "first chat")

    def mcp(*args: str) -> str:
        done = treechat(tmp_path, "mcp", *args, env=NO_KEYCHAIN)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    assert mcp("list").startswith("No MCP servers yet.")
    added = mcp("add", "echo", "--", sys.executable, "-c", "pass", "--flag")
    assert added.startswith("Added echo (stdio: ") and "each tool call is asked about" in added
    (listed,) = json.loads(mcp("list", "--json"))
    assert (listed["name"], listed["enabled"]) == ("echo", True)
    assert mcp("disable", "echo") == "echo is off in every chat that does not say otherwise."
    assert json.loads(mcp("list", "--json"))[0]["enabled"] is False
    assert mcp("enable", "echo", "--session", "first chat") == f"echo is on in chat {chat[:12]}."
    assert mcp("protect", "echo", "read") == "echo › read is protected from aging."
    assert mcp("protect", "echo", "read", "--off") == "echo › read ages like other tools again."
    assert mcp("remove", "echo") == "Removed echo."
    assert mcp("list").startswith("No MCP servers yet.")


def test_a_server_with_neither_command_nor_url_is_refused(tmp_path: Path) -> None:
    done = treechat(tmp_path, "mcp", "add", "nothing", env=NO_KEYCHAIN)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.strip() == ("treechat mcp: give the server's command after `--`, "
                                   "or --url URL")
