"""Treechat's log file: under the data dir, readable by this user only, and never holding an
API key, whatever logger the record came from. Each case runs in a child process so the
handlers it installs on the root logger do not leak into other tests."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SCRIPT = textwrap.dedent("""
    import logging, sys
    from pathlib import Path
    from treechat.logs import configure_logging
    from treechat.providers.keys import remember_secret

    data = Path(sys.argv[1])
    path = configure_logging(data)
    assert configure_logging(data) == path  # a second call adds no second handler
    remember_secret("a-custom-token-without-a-known-shape")
    logging.getLogger("treechat.chat").info("sent with sk-proj-ABCDEFGHIJKLMNOP1234 to openai")
    logging.getLogger("LiteLLM").warning("header a-custom-token-without-a-known-shape refused")
    logging.getLogger("treechat.chat").debug("too detailed to keep")
    logging.getLogger("some.library").info("below warning: dropped")
    logging.getLogger("some.library").warning("a library's warning is kept")
    print(path)
""")


def run(data_dir: Path) -> Path:
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(data_dir)], capture_output=True,
                         text=True, check=True, timeout=120)
    return Path(out.stdout.strip())


def test_the_log_keeps_what_matters_and_no_key(tmp_path: Path) -> None:
    path = run(tmp_path / "data")
    assert path == tmp_path / "data" / "logs" / "treechat.log"
    text = path.read_text(encoding="utf-8")
    assert "sent with" in text and "to openai" in text
    assert "sk-proj-ABCDEFGHIJKLMNOP1234" not in text
    assert "a-custom-token-without-a-known-shape" not in text and "refused" in text
    assert "a library's warning is kept" in text
    assert "too detailed" not in text and "below warning" not in text
    assert text.count("sent with") == 1


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_the_log_and_its_folders_are_this_users_only(tmp_path: Path) -> None:
    path = run(tmp_path / "data")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "data").stat().st_mode) == 0o700
