"""The chat view's list model: a long path shows its end and brings the rows above in as
they are asked for, in order, and a long chat read whole after its end keeps its rows."""

from __future__ import annotations

from treechat.ui.chat.model import ChatModel, RowKind

from ..session_views import chain, session_view


def test_a_long_path_shows_its_end_and_brings_earlier_rows_in_at_the_top() -> None:
    model = ChatModel()
    model.set_view(session_view(chain(1_000)))
    assert model.rows[-1].key == "n999" and 0 < len(model.rows) < 1_000
    assert model.has_earlier() and model.rows[0].kind is RowKind.USER  # a turn never cut
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    first_key, before = model.rows[0].key, len(model.rows)
    ahead = model.earlier_rows()  # measured while idle: they come in just as they were
    added = model.show_earlier()
    assert model.rows[:added] == ahead
    assert added > 0 and inserted == [(0, added - 1)]  # above: the rows below keep their order
    assert model.rows[added].key == first_key and len(model.rows) == before + added
    # a message far above comes in with everything below it; one not on the path does not
    assert model.show_from("n3") == 1 and model.rows[0].key == "n2"
    assert model.show_from("elsewhere") == -1
    while model.has_earlier():
        model.show_earlier()
    assert [r.key for r in model.rows] == [f"n{i}" for i in range(1_000)]


def test_the_same_chat_read_whole_keeps_the_rows_its_end_showed() -> None:
    nodes = chain(1_000)
    model = ChatModel()
    end = session_view(nodes[-59:])  # what reading the end alone gives: from a reply on
    model.set_view(end)
    shown = [r.key for r in model.rows]
    assert shown[0] == "n941"
    removed: list[int] = []
    model.rowsRemoved.connect(lambda *_: removed.append(1))
    inserted: list[tuple[int, int]] = []
    model.rowsInserted.connect(lambda _parent, first, last: inserted.append((first, last)))
    model.set_view(session_view(nodes))
    # the rows stay; the question the first reply answers comes in above them
    assert [r.key for r in model.rows] == ["n940", *shown] and not removed
    assert inserted == [(0, 0)]
    assert model.has_earlier() and model.show_from("n0") == 0
