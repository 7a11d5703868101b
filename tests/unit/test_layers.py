"""The dependency direction holds: core is the standard library and itself, nothing else, and
each heavy package has one home."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import treechat

ROOT = Path(treechat.__file__).parent
CORE = ROOT / "core"

# Run with -I -S: no site-packages, no user site, no PYTHONPATH; only desktop/ is added, so
# any third-party import anywhere in core fails here, whatever is installed.
BARE_IMPORT = textwrap.dedent("""
    import importlib, json, pkgutil, sys
    sys.path.insert(0, sys.argv[1])
    import treechat.core as core
    names = [m.name for m in pkgutil.walk_packages(core.__path__, "treechat.core.")]
    for name in names:
        importlib.import_module(name)
    # (a module marked missing, None, was not imported: the package's own __init__ marks one)
    loaded = sorted({m.split(".")[0] for m, mod in sys.modules.items() if mod is not None})
    outside = sorted(m for m in sys.modules
                     if m.startswith("treechat.") and not m.startswith("treechat.core"))
    print(json.dumps({"names": names, "loaded": loaded, "outside": outside}))
""")


def _bare_import() -> dict[str, list[str]]:
    out = subprocess.run(
        [sys.executable, "-I", "-S", "-c", BARE_IMPORT, str(ROOT.parent)],
        capture_output=True, text=True, check=False, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, list[str]] = json.loads(out.stdout)
    return result


def test_core_and_every_core_module_import_in_a_bare_interpreter() -> None:
    result = _bare_import()
    expected = {
        "treechat.core." + ".".join(p.relative_to(CORE).with_suffix("").parts)
        for p in CORE.rglob("*.py") if p.name != "__init__.py"
    }
    assert expected <= set(result["names"])
    foreign = [m for m in result["loaded"]
               if m not in sys.stdlib_module_names and m not in ("treechat", "__main__")]
    assert foreign == []
    # core reaches no other layer of Treechat either (the package's own __init__ aside)
    assert result["outside"] == []


def _imported_modules(tree: ast.AST) -> list[tuple[int, str]]:
    """Every absolute import in a module, at any depth (inside functions too)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def test_no_core_module_imports_a_third_party_package_even_lazily() -> None:
    offenders = []
    for path in sorted(CORE.rglob("*.py")):
        for line, module in _imported_modules(ast.parse(path.read_text(encoding="utf-8"))):
            top = module.split(".")[0]
            if top not in sys.stdlib_module_names and top != "__future__":
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {module}")
    assert offenders == []


def test_the_check_sees_a_lazy_third_party_import() -> None:
    lazy = ast.parse("def f():\n    import charset_normalizer\n    from PIL import Image\n")
    assert _imported_modules(lazy) == [(2, "charset_normalizer"), (3, "PIL")]


def test_heavy_imports_have_one_home_each() -> None:
    homes = {"duckdb": "store", "litellm": "providers", "PySide6": "ui", "qasync": "ui"}
    offenders = []
    for path in ROOT.rglob("*.py"):
        rel = path.relative_to(ROOT)
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
    trees = {str(p.relative_to(ROOT)): ast.parse(p.read_text(encoding="utf-8"))
             for p in ROOT.rglob("*.py")}
    importers = sorted(
        name for name, tree in trees.items() if any(map(_is_litellm_import, ast.walk(tree)))
    )
    assert importers == ["providers/llm.py"]
    # Lazily: inside a function, never at module level (it takes seconds to import).
    assert not [n for n in trees["providers/llm.py"].body if _is_litellm_import(n)]
