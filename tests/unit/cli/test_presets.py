"""`treechat presets list|export|import`: the shipped presets listed, your own exported and
imported back, a broken file refused in one line."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_cli import treechat


def test_presets_list_export_import(tmp_path: Path) -> None:
    listed = json.loads(treechat(tmp_path, "presets", "list", "--json").stdout)
    assert listed and all(p["builtin"] for p in listed)
    mine = tmp_path / "mine.json"
    mine.write_text(json.dumps([{"name": "Haiku poet", "system_prompt": "Write haiku.",
                                 "parameters": {"temperature": 0.9}}]), encoding="utf-8")
    assert "Imported 1 preset: Haiku poet" in treechat(tmp_path, "presets", "import",
                                                       str(mine)).stdout
    out = tmp_path / "out.json"
    treechat(tmp_path, "presets", "export", "Haiku poet", "-o", str(out))
    (exported,) = json.loads(out.read_text("utf-8"))["presets"]
    assert exported["system_prompt"] == "Write haiku."
    assert exported["parameters"] == {"temperature": 0.9}
    broken = tmp_path / "broken.json"
    broken.write_text('{"presets": 1', encoding="utf-8")
    failed = treechat(tmp_path, "presets", "import", str(broken), check=False)
    assert failed.returncode == 2 and "not a JSON file" in failed.stderr
