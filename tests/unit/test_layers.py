"""The dependency direction holds: core imports with no Qt, DuckDB or litellm installed."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import treechat

BLOCKER = textwrap.dedent("""
    import importlib, importlib.abc, pkgutil, sys
    BLOCKED = {"PySide6", "qasync", "duckdb", "litellm", "tiktoken", "keyring", "llama_cpp"}

    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked)")
            return None

    sys.meta_path.insert(0, Block())
    import treechat.core as core
    names = [m.name for m in pkgutil.walk_packages(core.__path__, "treechat.core.")]
    for name in names:
        importlib.import_module(name)
    print(len(names))
""")


def test_core_imports_without_qt_duckdb_or_litellm() -> None:
    out = subprocess.run(
        [sys.executable, "-c", BLOCKER], capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    assert int(out.stdout.strip()) >= 2


def test_heavy_imports_have_one_home_each() -> None:
    root = Path(treechat.__file__).parent
    homes = {"duckdb": "store", "litellm": "providers", "PySide6": "ui", "qasync": "ui"}
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        for line in path.read_text(encoding="utf-8").splitlines():
            stripped = line.strip()
            for module, home in homes.items():
                if stripped.startswith((f"import {module}", f"from {module}")):
                    allowed = rel.parts[0] == home or (home == "ui" and rel.name == "app.py")
                    if not allowed:
                        offenders.append(f"{rel}: {stripped}")
    assert offenders == []


def _is_litellm_import(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name.split(".")[0] == "litellm" for a in node.names)
    return isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "litellm"


def test_litellm_is_imported_by_exactly_one_module_and_lazily() -> None:
    root = Path(treechat.__file__).parent
    trees = {str(p.relative_to(root)): ast.parse(p.read_text(encoding="utf-8"))
             for p in root.rglob("*.py")}
    importers = sorted(
        name for name, tree in trees.items() if any(map(_is_litellm_import, ast.walk(tree)))
    )
    assert importers == ["providers/llm.py"]
    # Lazily: inside a function, never at module level (it takes seconds to import).
    assert not [n for n in trees["providers/llm.py"].body if _is_litellm_import(n)]
