"""The child's script needs only the standard library until it loads the model: it runs with
no site-packages and no Treechat on the path."""

from __future__ import annotations

import subprocess
import sys

from treechat.providers.local.bundled_model import SERVER_SCRIPT


def test_the_script_runs_by_path_without_treechat_or_site_packages() -> None:
    out = subprocess.run([sys.executable, "-E", "-s", "-S", str(SERVER_SCRIPT), "--help"],
                         capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "--parent-pid" in out.stdout and "--chat-template" in out.stdout


def test_a_missing_model_argument_is_a_usage_error() -> None:
    out = subprocess.run([sys.executable, "-E", "-s", "-S", str(SERVER_SCRIPT)],
                         capture_output=True, text=True, check=False, timeout=60)
    assert out.returncode == 2
    assert "--model" in out.stderr
