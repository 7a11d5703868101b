"""What each node of the graph shows: its kind (the shape drawn), the one line beside it
(a reply's words without its Markdown), and that line cut to the room it has."""

from __future__ import annotations

from PySide6.QtGui import QFont

from treechat.core.model import Node
from treechat.ui.graph.items import LABEL_X, elided_label, label_box, label_for, node_kind


def test_kinds_follow_the_role_and_runtime_nodes_say_what_they_are() -> None:
    assert node_kind(Node("u", 0, 0.0, "s", "user", output="hi")) == "user"
    assert node_kind(Node("t", 0, 0.0, "s", "tool", name="search")) == "tool"
    assert node_kind(Node("a", 0, 0.0, "s", "runtime", name="attach")) == "attach"
    assert node_kind(Node("m", 0, 0.0, "s", "runtime", name="merge")) == "merge"
    assert node_kind(Node("r", 0, 0.0, "s", "runtime", name="other")) == "runtime"


def test_a_label_is_one_line_of_what_the_message_shows() -> None:
    reply = Node("a", 0, 0.0, "s", "assistant", output="# Plan\n\n**Bold** and `code`\nnext")
    assert label_for(reply) == "Plan Bold and code next"
    typed = Node("u", 0, 0.0, "s", "user", output="**as typed**\n  spaced")
    assert label_for(typed) == "**as typed** spaced"  # what the person wrote, as written
    assert label_for(Node("t", 0, 0.0, "s", "tool", name="web.run")) == "web.run"
    assert len(label_for(Node("u", 0, 0.0, "s", "user", output="word " * 100))) == 160


def test_a_merge_says_it_is_one() -> None:
    merge = Node("m", 0, 0.0, "s", "runtime", name="merge", output="Combine both")
    assert label_for(merge).startswith("Merge: ")


def test_a_label_is_cut_to_its_room_and_dropped_without_any(qapp: object) -> None:
    node = Node("u", 0, 0.0, "s", "user", output="a fairly long question about the weather")
    font = QFont()
    whole = elided_label(node, 10_000, font)
    assert whole == label_for(node)
    short = elided_label(node, 60, font)
    assert short.endswith("…") and len(short) < len(whole)
    assert elided_label(node, 10, font) == ""
    box = label_box(short, font)
    assert box.left() == LABEL_X and box.width() > 0
    assert label_box("", font).isEmpty()
