"""litellm: its data files (model cost map, tokenizer tables, provider lists) and the modules
it imports by name at run time, which PyInstaller cannot see."""

from __future__ import annotations

import runpy
from pathlib import Path

from PyInstaller.utils.hooks import collect_data_files, copy_metadata, get_package_paths

# Docs, type stubs and the proxy's admin UI are not read at run time.
datas = collect_data_files(
    "litellm",
    excludes=["proxy/**", "**/*.md", "**/*.pyi", "**/*.wav", "**/AGENTS.md", "**/README*"],
)
# litellm reads its own version (and a few others') from package metadata.
datas += copy_metadata("litellm")


def _lazy_modules() -> list[str]:
    # The registry is read as a file: importing litellm here would run its start-up code.
    registry = Path(get_package_paths("litellm")[1]) / "_lazy_imports_registry.py"
    if not registry.is_file():  # an older litellm that imports everything eagerly
        return []
    tables = runpy.run_path(str(registry))
    modules: set[str] = set()
    for table in (tables.get("LITELLM_ATTRIBUTES", {}), tables.get("UTILS_ATTRIBUTES", {})):
        for module, _attribute in table.values():
            # Relative names are resolved against the `litellm` package.
            name = "litellm" + module if module.startswith(".") else module
            if not name.startswith("litellm.proxy"):
                modules.add(name)
    return sorted(modules)


hiddenimports = _lazy_modules()
