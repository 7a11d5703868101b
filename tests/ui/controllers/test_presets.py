"""Presets in the window: a new chat from a preset, and presets exported to a file and
imported back."""

from __future__ import annotations

import json
from pathlib import Path

from ..conftest import Aio, Desk
from .controls_desk import controls


def test_new_chat_from_a_preset_and_presets_export_and_import(
    desk: Desk, aio: Aio, tmp_path: Path
) -> None:
    c = controls(desk)
    target = tmp_path / "mine.json"

    async def scenario() -> None:
        await c.presets.fill_presets()
        names = [a.text() for a in c.preset_menu.actions()]
        assert "Code reviewer" in names or len(names) >= 3, names
        next(a for a in c.preset_menu.actions() if a.isEnabled()).trigger()
        await aio.until(lambda: desk.controller.current_session_id is not None, what="chat")
        await desk.controller.tasks.idle()
        sid = desk.controller.current_session_id
        assert sid is not None
        settings = await desk.services.chat.settings.current(sid)
        assert settings.preset == names[0] and settings.instructions
        assert desk.window.title.text() == names[0]

        dialog = c.presets.export_presets()
        dialog.selectFile(str(target))
        dialog.accept()
        await aio.until(target.exists, what="export file")
        await desk.controller.tasks.idle()
        data = json.loads(target.read_text("utf-8"))
        data["presets"] = [dict(data["presets"][0], name="My own")]
        target.write_text(json.dumps(data), "utf-8")
        dialog = c.presets.import_presets()
        dialog.selectFile(str(target))
        dialog.accept()
        await aio.until(lambda: bool(imported), what="import")
        await c.presets.fill_presets()

    imported: list[int] = []
    c.presetsImported.connect(imported.append)
    aio.run(scenario())
    assert imported == [1]
    assert "My own" in [a.text() for a in c.preset_menu.actions()]
