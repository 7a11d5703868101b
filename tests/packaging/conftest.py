"""Helpers for the packaging tests: the build scripts under packaging/ are loaded by path
(packaging/ is not a Python package: its name belongs to the PyPI `packaging` library)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]


def load_packaging_module(name: str) -> ModuleType:
    """packaging/<name>.py as a module, loaded once."""
    key = f"_treechat_packaging_{name}"
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, ROOT / "packaging" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[key] = module
    spec.loader.exec_module(module)
    return module
