"""Regenerates store-damaged-light.png and store-damaged-dark.png: the window on a store
whose file was cut short (as tests/ui/controllers/test_store_health.py does it), with the
banner that says what is wrong and the ways out, after a send was refused. Run from the
repository root under a display (Xvfb works):

    PYTHONPATH=. xvfb-run -s "-screen 0 1600x1000x24" .venv/bin/python \
        docs/screenshots/capture_store_damaged.py
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
from pathlib import Path

from keyring.backends import fail
from PySide6.QtWidgets import QApplication
from tests.ui.controllers.test_store_health import build_store

from treechat.app import connect_services, create_window
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.store.database import default_store_path
from treechat.ui.shell.event_loop import close_event_loop, create_event_loop

OUT = Path(__file__).resolve().parent


async def shoot(app: QApplication, data_dir: Path) -> None:
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              keys=KeyStore(environ={}, backend=fail.Keyring()))
    window, prefs, theme = create_window(app, data_dir)
    controller = connect_services(window, services, prefs, theme)
    window.resize(1100, 720)
    window.show()
    await controller.start()
    for mode in ("light", "dark"):
        if theme is not None:
            theme.set_mode(mode)
        window.composer.set_text("Where did we leave the trip plan?")
        controller.turns.send(window.composer.text())
        await asyncio.sleep(0.8)
        path = OUT / f"store-damaged-{mode}.png"
        window.grab().save(str(path))
        print("wrote", path)
    await controller.close()
    await services.close()
    services.close_store()
    window.close_now()


def main() -> int:
    app = QApplication(sys.argv)
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp) / "data"
        path = default_store_path(data_dir)
        build_store(path)
        os.truncate(path, int(path.stat().st_size * 0.95))
        loop = create_event_loop(app)
        try:
            loop.run_until_complete(shoot(app, data_dir))
        finally:
            close_event_loop(loop)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
