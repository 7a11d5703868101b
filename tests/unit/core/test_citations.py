"""Passages as the model reads them and back: knowledge by file, page and line, recall and
other chats by node; a reply's sources are its turn's passages; its citations become links
to the place, and only our own links are read back as places."""

from __future__ import annotations

from treechat.core.citations import (
    PASSAGES_KEY,
    Passage,
    parse_source_url,
    passages_in,
    reply_sources,
    source_url,
    with_sources,
    written,
)
from treechat.core.model import Node, Role


def test_written_passages_are_read_back_with_their_sources() -> None:
    passages = [
        Passage("knowledge", "The shed key hangs\nbehind the door.", path="/n/garden.md", line=3),
        Passage("knowledge", "Page text.", path="/n/a b.pdf", page=2, line=7),
        Passage("recall", "our boat is Marigold", node_id="n_1", title="user, aged"),
        Passage("chat", "we chose blue", node_id="n_9", title="Paint"),
    ]
    text = "4 passage(s):\n\n" + written(passages)
    assert passages_in(text) == passages
    assert [p.source for p in passages] == [
        "/n/garden.md, line 3", "/n/a b.pdf, page 2, line 7", "node n_1 (user, aged)",
        "chat “Paint”, node n_9"]
    assert Passage.from_dict(passages[1].as_dict()) == passages[1]


def _node(i: str, role: Role, text: str, *, name: str = "", caller: str | None = None,
          meta: dict[str, object] | None = None) -> Node:
    return Node(i, 0, 1.0, "s", role, name=name, output=text, caller=caller,
                predecessor=None, metadata=dict(meta or {}))


def test_a_reply_s_sources_are_what_its_turn_retrieved() -> None:
    old = Passage("knowledge", "old", path="/n/old.md", line=1)
    new = Passage("knowledge", "new", path="/n/new.md", line=4)
    tail = Passage("knowledge", "tail", path="/n/tail.md", page=3, line=1)
    path = [
        _node("u1", "user", "first"),
        _node("t1", "tool", written([old]), name="search_knowledge", caller="u1"),
        _node("u2", "user", "second"),
        _node("a1", "assistant", ""),
        _node("t2", "tool", "ignored", name="search_knowledge", caller="a1",
              meta={PASSAGES_KEY: [new.as_dict(), new.as_dict()]}),
        _node("a2", "assistant", "See [new.md, line 4].", meta={PASSAGES_KEY: [tail.as_dict()]}),
    ]
    assert reply_sources(path, path[-1]) == [new, tail]
    shown = with_sources(path[-1].text, [new, tail])
    assert f"[new.md, line 4]({source_url(new)})" in shown  # the citation in the text links
    assert shown.endswith(f"**Sources**\n\n1. [new.md, line 4]({source_url(new)})")
    uncited = with_sources("No idea.", [new, tail])
    assert "**Passages retrieved (none cited)**" in uncited
    assert uncited.endswith(f"2. [tail.md, page 3, line 1]({source_url(tail)})")
    assert with_sources("plain", [Passage("recall", "x", node_id="n")]) == "plain"


def test_only_a_source_link_is_read_back_as_a_place() -> None:
    p = Passage("knowledge", "x", path="/home/me/My Notes/plan (v2).md", page=0, line=12)
    assert parse_source_url(source_url(p)) == ("/home/me/My Notes/plan (v2).md", 0, 12)
    assert parse_source_url("file:///etc/passwd") is None
    assert parse_source_url("https://example.com/a?line=3") is None


def test_a_citation_links_to_the_passage_whose_lines_hold_it_as_the_model_writes_it() -> None:
    garden = Passage("knowledge", "one\ntwo\nthree\nfour\nfive", path="/n/garden.md", line=1)
    later = Passage("knowledge", "six\nseven", path="/n/garden.md", line=6)
    lease = Passage("knowledge", "Rent is due\non the first.", path="/n/Lease.pdf", page=2,
                    line=1)
    text = ("Line four [garden.md, line 4], seven [garden.md, lines 6-7], the rent "
            "[lease.pdf, page 2], nothing at [garden.md, line 40] or [other.md, line 1], "
            "and a box [x].")
    shown = with_sources(text, [garden, later, lease])
    def at(line: int) -> str:  # the link opens the file at the line cited
        return source_url(Passage("knowledge", "", path="/n/garden.md", line=line))

    assert f"[garden.md, line 4]({at(4)})" in shown
    assert f"[garden.md, lines 6-7]({at(6)})" in shown
    assert f"[lease.pdf, page 2]({source_url(lease)})" in shown
    assert "[garden.md, line 40] or [other.md, line 1]," in shown  # no passage holds them
    assert "a box [x]." in shown
    assert shown.endswith(
        f"**Sources**\n\n1. [garden.md, line 1]({source_url(garden)})\n"
        f"2. [garden.md, line 6]({source_url(later)})\n"
        f"3. [Lease.pdf, page 2, line 1]({source_url(lease)})")
