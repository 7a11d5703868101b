"""The Context tab: a commit's items with their marks, the header counting what is live,
and selecting an item shows what the model reads for it and names its source node."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.commit import ContextCommit, ContextItem
from treechat.ui.graph.timeline import CommitTimeline, item_marks, short_id


def commit() -> ContextCommit:
    items = (
        ContextItem("a", "user", rendered="Name a colour", tokens=5, locked=True),
        ContextItem("b", "assistant", rendered="Blue", tokens=2, attached_from="cc_1234567890"),
    )
    return ContextCommit("cc_abcdef123456", "s", (), 1.0, "b", "v1", 7, items, live=(0, 1))


def test_marks_say_what_is_special_about_an_item() -> None:
    item = ContextItem("a", "user", locked=True, is_anchor=True, attached_from="cc_12345678ab")
    assert item_marks(item, pinned=True) == ["locked", "pinned", "anchor", "from 12345678"]
    assert item_marks(ContextItem("b", "assistant"), pinned=False) == []
    assert short_id("cc_abcdef123456") == "abcdef12"


def test_the_header_counts_the_commits_live_items(qtbot: QtBot) -> None:
    timeline = CommitTimeline()
    qtbot.addWidget(timeline)
    assert timeline.header.text() == "No context yet: send a message."
    timeline.set_commit(commit())
    text = timeline.header.text()
    assert text.startswith("Commit abcdef12 · 2 of 2 items live · 7 tokens in these items")
    timeline.set_commit(None)
    assert timeline.header.text() == "No context yet: send a message."


def test_selecting_an_item_shows_its_text_and_names_its_node(qtbot: QtBot) -> None:
    timeline = CommitTimeline()
    qtbot.addWidget(timeline)
    timeline.set_commit(commit(), pinned=frozenset({"a"}))
    named: list[str] = []
    timeline.itemSelected.connect(named.append)
    assert timeline.select_source("b")
    assert named == ["b"]
    assert timeline.detail.toPlainText().endswith("\n\nBlue")
    assert not timeline.select_source("nowhere")
