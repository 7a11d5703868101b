"""Parts of litellm that its import loads and a request rarely reads, loaded at their first
use instead: its Anthropic tokenizer (parsed at import, 2.4 MB kept as text) and
`cryptography` (imported for Oracle Cloud request signing, 10 to 17 MB resident). Each is
what litellm would have had, the moment something reads it."""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import json
import sys
import threading
from collections.abc import Callable, Iterator
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

ANTHROPIC_TOKENIZER_FILE = "anthropic_tokenizer.json"
_UTILS = "litellm.utils"
_OCI = "litellm.llms.oci.common_utils"
# What litellm's Oracle Cloud module takes from `cryptography`, under the names it uses.
_OCI_CRYPTOGRAPHY = {
    "hashes": "cryptography.hazmat.primitives.hashes",
    "serialization": "cryptography.hazmat.primitives.serialization",
    "padding": "cryptography.hazmat.primitives.asymmetric.padding",
    "rsa": "cryptography.hazmat.primitives.asymmetric.rsa",
}


class LazyModule(ModuleType):
    """A module imported at the first attribute read of it (the real one from then on)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(importlib.import_module(self.__name__), name)


class _RefuseCryptography:
    """A finder that answers "not installed" for `cryptography` to the thread importing
    litellm; any other thread (reading a key from the keychain, say) gets the real one."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self, name: str, path: object = None, target: object = None
    ) -> ModuleSpec | None:
        if threading.get_ident() != self.thread:
            return None
        if name == "cryptography" or name.startswith("cryptography."):
            raise ModuleNotFoundError(f"No module named {name!r} (deferred)", name=name)
        return None  # the next finder decides


@contextlib.contextmanager
def deferring() -> Iterator[None]:
    """Around `import litellm` (on the thread that imports it): the Anthropic tokenizer is
    not parsed, and `cryptography` (unless something imported it already) reads as absent;
    `restore()` afterwards puts each back as a loader of the real thing."""
    refusing = _RefuseCryptography()
    deferred_cryptography = "cryptography" not in sys.modules and _installed("cryptography")
    if deferred_cryptography:
        sys.meta_path.insert(0, refusing)
    original_load = json.load
    json.load = _skip_anthropic_tokenizer(original_load)
    try:
        yield
    finally:
        json.load = original_load
        with contextlib.suppress(ValueError):
            sys.meta_path.remove(refusing)


def restore() -> None:
    """After `import litellm` under `deferring()`: what was not loaded loads on first use."""
    _defer_anthropic_tokenizer_text()
    _defer_oci_cryptography()


def _installed(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _skip_anthropic_tokenizer(original: Callable[..., Any]) -> Callable[..., Any]:
    def load(fp: Any, *args: Any, **kwargs: Any) -> Any:
        if str(getattr(fp, "name", "")).endswith(ANTHROPIC_TOKENIZER_FILE):
            return {}  # litellm writes this back out as text; restore() reads the file
        return original(fp, *args, **kwargs)

    return load


def _defer_anthropic_tokenizer_text() -> None:
    """litellm.utils keeps the tokenizer as `claude_json_str`, read only when an Anthropic
    model's tokens are counted: it goes, and the module reads the file when asked for it."""
    utils = sys.modules.get(_UTILS)
    if utils is None:
        return
    names = vars(utils)
    names.pop("json_data", None)
    if names.get("claude_json_str") != "{}":  # parsed after all: keep what litellm made
        return
    del names["claude_json_str"]
    fallback = names.get("__getattr__")

    def module_getattr(name: str) -> Any:
        if name == "claude_json_str":
            text = _anthropic_tokenizer_text()
            names["claude_json_str"] = text
            return text
        if callable(fallback):
            return fallback(name)
        raise AttributeError(f"module {_UTILS!r} has no attribute {name!r}")

    names["__getattr__"] = module_getattr


def _anthropic_tokenizer_text() -> str:
    from importlib import resources

    tokenizers = resources.files("litellm.litellm_core_utils.tokenizers")
    return tokenizers.joinpath(ANTHROPIC_TOKENIZER_FILE).read_text(encoding="utf-8")


def _defer_oci_cryptography() -> None:
    """litellm's Oracle Cloud module imported `cryptography` under `deferring()` and found it
    absent: it gets the modules it uses as lazy ones, and is told they are there."""
    oci = sys.modules.get(_OCI)
    if oci is None or vars(oci).get("_CRYPTOGRAPHY_AVAILABLE") is not False:
        return
    if "cryptography" not in sys.modules and not _installed("cryptography"):
        return  # really absent: litellm says so itself when an OCI request needs it
    for name, module in _OCI_CRYPTOGRAPHY.items():
        setattr(oci, name, sys.modules.get(module) or LazyModule(module))
    oci._CRYPTOGRAPHY_AVAILABLE = True  # type: ignore[attr-defined]

