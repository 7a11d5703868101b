"""A reply's artifacts in the window: its menu offers to save or open each one, and saving
writes the artifact's code as it is, line breaks and all."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from treechat.core.artifacts import split_claude_markup
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store.database import Store

from ..conftest import MODEL, Aio, Desk, Seed

PAGE = "<!DOCTYPE html>\n<html>\n  <body><h1>Hi</h1></body>\n</html>"


def with_artifact(store: Store) -> None:
    split = split_claude_markup(
        f'Here:\n<antArtifact identifier="hi-page" type="text/html" title="Hi page">\n{PAGE}\n'
        "</antArtifact>")
    store.call(lambda r: r.create_session(Session("art", "Art", None, MODEL, 1.0,
                                                  updated_at=1.0)))
    ask = Node("art-0", 0, 1.0, "art", "user", output="A page please")
    answer = Node("art-1", 0, 2.0, "art", "assistant", output=split.text, predecessor="art-0",
                  metadata={"artifacts": [a.as_dict() for a in split.artifacts]})
    store.call(lambda r: r.apply_change("art", Change((ask, answer), "art-1"), 2.0))


def test_save_or_open_an_artifact_from_its_reply(
    desk_with: Callable[[Seed | None], Desk], aio: Aio, tmp_path: Path
) -> None:
    desk = desk_with(with_artifact)

    async def scenario() -> None:
        await desk.controller.load_session("art")

    aio.run(scenario())
    menu = desk.chat.context_menu("art-1")
    labels = [a.text() for a in menu.actions()]
    assert "Save “Hi page”…" in labels and "Open “Hi page”" in labels
    assert not any("Hi page" in label for label in
                   (a.text() for a in desk.chat.context_menu("art-0").actions()))
    row = next(r for r in desk.chat.model.rows if r.key == "art-1")
    assert row.node is not None and "**Hi page** · HTML page" in row.node.text
    (artifact,) = desk.controller.artifacts.artifacts("art-1")
    dialog = desk.controller.artifacts.save(artifact)
    assert dialog.selectedFiles()[0].endswith("hi-page.html")
    dialog.reject()
    target = tmp_path / "page.html"
    assert desk.controller.artifacts.write(artifact, target) == target
    assert target.read_text("utf-8").strip() == PAGE
    assert "Saved “Hi page”" in desk.window.statusBar().currentMessage()
