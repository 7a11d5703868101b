"""PySide6 looks at every module imported after it (its `__feature__` hook reads the module's
source to see whether it uses PySide). Reading the source asks the module for `__wrapped__`, and
a module with a lazy `__getattr__` answers by importing: pydantic does, and while pydantic is
half-initialized that import raises ImportError, which the hook lets through. litellm's import
then fails for the life of the process ("cannot import name 'import_string' from partially
initialized module 'pydantic._internal._validators'"), and with it every reply.

The hook's probe is looked up by name at each call, so it is wrapped here: a module whose source
cannot be read is a module that does not use PySide, whatever the reason. Treechat's own modules
never opt in to `__feature__`, so theirs is not read at all: a file read for each of the ~80
modules the window imports between its outline and its first usable frame (tens of ms on the
GUI thread). Nothing else of PySide's is touched, and a PySide without this probe is left
alone."""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import ModuleType
from typing import cast

_PROBE = "_mod_uses_pyside"
_OWN = __name__.split(".")[0] + "."


def tolerate_lazy_modules() -> bool:
    """Install the tolerant probe (idempotent); False when this PySide has no such hook."""
    feature = sys.modules.get("shibokensupport.feature")
    probe = getattr(feature, _PROBE, None)
    if feature is None or not callable(probe):
        return False
    if getattr(probe, "__treechat_tolerant__", False):
        return True
    original = cast(Callable[[ModuleType], bool], probe)

    def uses_pyside(module: ModuleType) -> bool:
        if getattr(module, "__name__", "").startswith(_OWN):
            return True  # the default feature selection: none, as its source would say
        try:
            return original(module)
        except Exception:  # the module's own lazy attributes failed: it is not a Qt module
            return False

    uses_pyside.__dict__["__treechat_tolerant__"] = True  # a second call sees it installed
    setattr(feature, _PROBE, uses_pyside)
    return True
