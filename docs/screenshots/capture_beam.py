"""Regenerates the screenshots of several models at once (docs/screenshots/beam-*.png): three
replies streaming side by side, the finished compare view with what only one reply says
tinted, the set of models to ask, and the fused reply with its merge in the graph; light and
dark. Three loopback servers answer through litellm.

    xvfb-run -s "-screen 0 1366x768x24" .venv/bin/python docs/screenshots/capture_beam.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from pathlib import Path

from PySide6.QtWidgets import QApplication, QWidget

OUT = Path(__file__).resolve().parent
sys.path.insert(0, str(OUT.parents[1]))

from tests.support.beam_servers import LABELS, MODELS, three_servers  # noqa: E402
from tests.support.loopback_server import Reply  # noqa: E402
from tests.ui.conftest import Aio  # noqa: E402

from treechat.app import connect_services, create_window  # noqa: E402
from treechat.providers import llm  # noqa: E402
from treechat.providers.keys import KeyStore  # noqa: E402
from treechat.services.bootstrap import build_services  # noqa: E402
from treechat.services.models.catalog import ModelChoice  # noqa: E402
from treechat.ui.shell.event_loop import create_event_loop  # noqa: E402

QUESTION = "What wood should I use for a workbench top?"
REPLIES = (
    "**Maple** is the best all-round choice for a workbench top.\n\n- Hard and dense: it "
    "resists dents.\n- Pale and even grain.\n\nSeal it with an oil finish.",
    "**Maple** is the best all-round choice for a workbench top.\n\n- Birch plywood is "
    "cheaper and stable.\n- Easy to replace when worn.\n\nSeal it with an oil finish.",
    "For a bench that lives in a damp garage, use **cedar** legs and a beech top.\n\n"
    "- Cedar resists rot.\n- Beech is hard and affordable.",
)
FUSED = (
    "**Maple top, cedar legs.** All three agree the top should be hard: maple (two replies) "
    "or beech (one).\n\n**Disagreement:** one reply assumed a damp garage and chose cedar for "
    "rot resistance; the others did not. I went with maple for the top, and cedar legs only "
    "if the bench stands on a damp floor."
)


def shoot(window: QWidget, name: str) -> None:
    """The screen, as the user sees it: popups are windows of their own."""
    window.screen().grabWindow(0).save(str(OUT / name))


def capture(app: QApplication, aio: Aio, mode: str, data: Path) -> None:
    with three_servers(tokens_per_second=40) as servers:
        for server, text in zip(servers, REPLIES, strict=True):
            server.queue(Reply(text=text))
        choices = tuple(ModelChoice(m, label, "openai", api_base=s.openai_base)
                        for m, label, s in zip(MODELS, LABELS, servers, strict=True))
        services = build_services(data, bundled=False, detect_local_servers=False,
                                  extra_models=choices, keys=KeyStore(environ={}))
        services.models.default_model = MODELS[0]
        window, prefs, theme = create_window(app, data)
        controller = connect_services(window, services, prefs, theme)
        theme.set_mode(mode)
        window.show()
        window.resize(1366, 740)
        aio.run(controller.start())
        beam = controller.beam
        assert beam is not None

        async def scenario() -> None:
            await aio.until(lambda: MODELS[2] in window.composer.model_ids())
            window.composer.several.set_chosen(list(MODELS))
            window.composer.set_text(QUESTION)
            window.composer.submit()
            await aio.until(lambda: beam.view is not None and all(
                len(c.body.toPlainText().split()) >= 6 for c in beam.view.columns))
            shoot(window, f"beam-streaming-{mode}.png")  # mid-stream: each column has begun
            await aio.until(lambda: beam.view is not None and all(
                c.column.key for c in beam.view.columns) and not controller.turns.is_running())
            await asyncio.sleep(0.5)
            shoot(window, f"beam-compare-{mode}.png")
            window.composer.several.open_popup()
            await asyncio.sleep(0.4)
            shoot(window, f"beam-several-{mode}.png")
            window.composer.several.popup.hide()
            view = beam.view
            assert view is not None
            view.fuse_model.setCurrentIndex(1)
            servers[1].queue(Reply(text=FUSED))
            view.fuse_button.click()
            await asyncio.sleep(0.3)
            await aio.until(lambda: not controller.turns.is_running(), timeout=60)
            window.dock.show()
            await asyncio.sleep(1.0)
            shoot(window, f"beam-fused-{mode}.png")
            await controller.close()
            await services.close()

        aio.run(scenario(), timeout=200)
        services.close_store()
        window.close_now()


def main() -> None:
    app = QApplication.instance() or QApplication(sys.argv)
    assert isinstance(app, QApplication)
    aio = Aio(create_event_loop(app))
    aio.run(llm.ensure_loaded(), timeout=300)
    with tempfile.TemporaryDirectory() as tmp:
        for mode in ("light", "dark"):
            capture(app, aio, mode, Path(tmp) / mode)


if __name__ == "__main__":
    main()
