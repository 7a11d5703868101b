"""tiktoken finds its encodings through the `tiktoken_ext` namespace package at run time."""

from __future__ import annotations

from PyInstaller.utils.hooks import collect_submodules

hiddenimports = collect_submodules("tiktoken_ext")
