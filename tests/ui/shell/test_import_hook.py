"""PySide's import hook must not make a lazy module's import fail: pydantic, half-initialized
under litellm's import, answers the hook's `__wrapped__` probe with an ImportError, and litellm
(every reply) then failed for the life of the process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

LAZY = '''
def __getattr__(name):
    raise ImportError("cannot import name 'x' from partially initialized module 'lazy'")
'''


def _import_after_pyside(tmp_path: Path, tolerate: bool) -> subprocess.CompletedProcess[str]:
    (tmp_path / "lazy_module.py").write_text(LAZY)
    script = textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(tmp_path)!r})
        from PySide6 import QtCore
        from treechat.ui.shell.import_hook import tolerate_lazy_modules
        if {tolerate!r}:
            assert tolerate_lazy_modules() and tolerate_lazy_modules()
        import lazy_module
        print("imported")
    """)
    # a fresh interpreter: the hook remembers every module it has seen
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)


def test_pyside_alone_lets_a_lazy_modules_error_break_its_import(tmp_path: Path) -> None:
    done = _import_after_pyside(tmp_path, tolerate=False)
    assert done.returncode != 0 and "partially initialized" in done.stderr


def test_with_the_tolerant_probe_the_lazy_module_imports(tmp_path: Path) -> None:
    done = _import_after_pyside(tmp_path, tolerate=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "imported"


def test_treechats_own_modules_are_not_read_by_the_hook() -> None:
    script = textwrap.dedent("""
        import linecache, sys
        from PySide6 import QtCore
        from treechat.ui.shell.import_hook import tolerate_lazy_modules
        assert tolerate_lazy_modules()
        from treechat.core.money import money  # the hook is shown the module imported from
        from colorsys import rgb_to_hsv
        print(sorted(f.rsplit("/", 1)[-1] for f in linecache.cache if f.endswith(".py")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    read = done.stdout.strip()
    assert "colorsys.py" in read  # the hook reads another module's source, as before
    assert "money.py" not in read  # but not Treechat's
