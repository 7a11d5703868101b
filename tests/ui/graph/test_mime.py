"""What a node dragged out of the graph (or a chat out of the list) carries, and a drop
reading it back: anything else dropped is not taken for a node."""

from __future__ import annotations

from PySide6.QtCore import QMimeData

from treechat.ui.graph.mime import NODE_MIME, node_mime, read_node_mime


def test_a_dragged_node_reads_back_as_its_session_and_node(qapp: object) -> None:
    data = node_mime("s1", "n7")
    assert read_node_mime(data) == ("s1", "n7")
    assert data.text() == "treechat:s1/n7"  # what a text editor gets if it is dropped there


def test_a_dragged_chat_names_no_node_and_means_its_head(qapp: object) -> None:
    assert read_node_mime(node_mime("s1", "")) == ("s1", None)


def test_anything_else_dropped_is_not_a_node(qapp: object) -> None:
    text = QMimeData()
    text.setText("treechat:s1/n7")
    assert read_node_mime(text) is None
    broken = QMimeData()
    broken.setData(NODE_MIME, b"{not json")
    assert read_node_mime(broken) is None
    no_session = QMimeData()
    no_session.setData(NODE_MIME, b'{"node_id": "n"}')
    assert read_node_mime(no_session) is None
