"""llama_cpp loads libllama (and, through it, ggml) with ctypes from `llama_cpp/lib`.

Only the libraries the text model needs are collected: not the multimodal ones (mtmd, llava),
and on Linux one copy of each library under its SONAME instead of the wheel's three copies.
"""

from __future__ import annotations

import sys
from pathlib import Path

from PyInstaller.utils.hooks import get_package_paths

_LIB_DIR = Path(get_package_paths("llama_cpp")[1]) / "lib"
_SKIP = ("mtmd", "llava")


def _wanted(path: Path) -> bool:
    name = path.name
    if any(skip in name for skip in _SKIP):
        return False
    if sys.platform == "win32":
        return name.endswith(".dll")
    if sys.platform == "darwin":
        return name.endswith(".dylib")
    # libllama.so is opened by that name; the ggml libraries are linked by SONAME (.so.0).
    return name == "libllama.so" or (name.startswith("libggml") and name.endswith(".so.0"))


binaries = [
    (str(p), "llama_cpp/lib") for p in sorted(_LIB_DIR.glob("*")) if p.is_file() and _wanted(p)
]
excludedimports = ["llama_cpp.server", "llama_cpp.mtmd_cpp", "llama_cpp.llava_cpp"]
