"""The Context tab's passages: each search result a commit's items carry is listed with its
kind and source, recall results by their node; selecting one names the tool call's node."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.citations import Passage, written
from treechat.core.commit import ContextItem
from treechat.ui.knowledge.passages import PassagesList


def test_passages_are_listed_with_their_sources(qtbot: QtBot) -> None:
    found = written([Passage("knowledge", "The shed key hangs behind the pantry door.",
                             path="/n/garden.md", line=3),
                     Passage("recall", "Our boat is named Marigold.", node_id="n_7",
                             title="user, aged")])
    items = (
        ContextItem("u", "user", rendered="Where is the key?"),
        ContextItem("t#1", "tool", rendered=found, tool_name="search_knowledge"),
        ContextItem("x", "tool", rendered="--- [/n/other.md, line 1] ---\nx",
                    tool_name="read_file"),  # not a search: not listed
    )
    shown = PassagesList()
    qtbot.addWidget(shown)
    shown.set_items(items)
    texts = [shown.model.item(r).text() for r in range(shown.model.rowCount())]
    assert texts[0].startswith("Knowledge: garden.md, line 3\nThe shed key")
    assert texts[1].startswith("Recall: node n_7 (user, aged)")
    assert len(texts) == 2 and shown.title.text() == "Passages this request carries: 2"
    assert "/n/garden.md, line 3" in str(shown.model.item(0).toolTip())
    assert "opens the file here" in str(shown.model.item(0).toolTip())
    assert "opens" not in str(shown.model.item(1).toolTip())  # a recalled message
    with qtbot.waitSignal(shown.nodeSelected) as picked:
        shown.view.clicked.emit(shown.model.index(0, 0))
    assert picked.args == ["t"]
    shown.set_items(())
    assert "No retrieved passages" in shown.title.text()


def test_the_empty_line_reads_whole_in_a_narrow_dock(qtbot: QtBot) -> None:
    shown = PassagesList()
    qtbot.addWidget(shown)
    shown.set_items(())
    shown.resize(260, 200)
    shown.show()
    qtbot.waitExposed(shown)
    assert shown.minimumSizeHint().width() <= 260
    assert shown.title.height() >= 2 * shown.title.fontMetrics().height()  # wrapped, not cut
