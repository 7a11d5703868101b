"""The whole application on a damaged store whose list of chats cannot be read either (cut to
half, as tests/unit/store/test_integrity.py does it): the window opens, read-only, with the
damaged-store banner, and the file is left byte for byte as it was."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

from tests.ui.controllers.test_store_health import build_store

from treechat.store.database import default_store_path

ROOT = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "LITELLM_LOCAL_MODEL_COST_MAP": "True"}

DRIVER = """
import argparse, json, sys
from PySide6.QtCore import QTimer
from treechat import app
from treechat.ui.shell.damaged_store_banner import DamagedStoreBanner

seen = {}

def painted(window):
    timer = QTimer(window)

    def poll():
        banners = [b for b in window.findChildren(DamagedStoreBanner) if b.isVisible()]
        if not (window.ready and banners):
            return
        seen["banner"] = banners[0].message.text()
        seen["listed"] = window.sessions.model.session_count()
        timer.stop()
        window.close()

    timer.timeout.connect(poll)
    timer.start(50)

args = argparse.Namespace(data_dir=sys.argv[1], session=None)
code = app.run(args, on_first_paint=painted)
print(json.dumps({"code": code, **seen}))
"""


def test_the_window_opens_on_a_store_whose_list_cannot_be_read(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    path = default_store_path(data_dir)
    build_store(path)
    os.truncate(path, int(path.stat().st_size * 0.5))
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    proc = subprocess.run(
        [sys.executable, "-c", DRIVER, str(data_dir)], cwd=ROOT, env=ENV,
        capture_output=True, text=True, timeout=240, check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0
    assert f"The conversation store {path} is damaged" in seen["banner"]
    assert "Treechat will not write to it" in seen["banner"]
    assert seen["listed"] == 0  # nothing could be read, and nothing was made up
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
