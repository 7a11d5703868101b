"""`treechat` with no subcommand goes straight to the window, without loading the
subcommands' modules (they would delay its first paint)."""

from __future__ import annotations

import subprocess
import sys

from treechat.cli import window_arguments


def test_plain_launches_are_the_window() -> None:
    assert window_arguments([]) == []
    assert window_arguments(["--data-dir", "/tmp/d"]) == ["--data-dir", "/tmp/d"]
    assert window_arguments(["--data-dir=/tmp/d", "-reverse"]) == ["--data-dir=/tmp/d",
                                                                   "-reverse"]


def test_anything_else_goes_to_the_full_parser() -> None:
    for words in (["sessions"], ["--data-dir", "d", "send", "x"], ["--smoke"], ["--help"],
                  ["--version"], ["--data-dir"], ["-platform", "offscreen"]):
        assert window_arguments(words) is None, words


def test_the_window_path_loads_no_subcommand_module() -> None:
    code = (
        "import sys\n"
        "import treechat.cli as cli\n"
        "assert cli.window_arguments([]) == []\n"
        "print(sorted(m for m in sys.modules if m.startswith('treechat.commands')"
        " or m in ('asyncio', 'json')))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"
