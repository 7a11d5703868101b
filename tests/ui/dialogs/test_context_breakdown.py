"""The /context dialog: a row per category with its tokens and share, Compact now offered
only when there is a record and no compaction running, and the compaction state in words."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.core.occupancy import build_occupancy
from treechat.ui.dialogs.context_breakdown import ContextBreakdownDialog
from treechat.ui.occupancy.format import CompactionState


def test_rows_show_each_category_and_compact_follows_the_record(qtbot: QtBot) -> None:
    dialog = ContextBreakdownDialog()
    qtbot.addWidget(dialog)
    dialog.set_occupancy(None)
    assert not dialog.compact_button.isEnabled()
    occ = build_occupancy(window=1000, categories={"system": 100, "messages": 300}, head="h")
    dialog.set_occupancy(occ)
    rows = {name: (tokens, share) for name, tokens, share in dialog.table_rows()}
    assert rows["System prompt"] == ("100", "10%")
    assert rows["Messages"] == ("300", "30%")
    assert dialog.occupancy is occ
    assert dialog.compact_button.isEnabled()
    asked: list[bool] = []
    dialog.compactRequested.connect(lambda: asked.append(True))
    dialog.compact_button.click()
    assert asked == [True]
    dialog.set_compacting(True)
    assert not dialog.compact_button.isEnabled()
    assert dialog.compact_button.text() == "Compacting…"


def test_the_compaction_state_is_said_in_words(qtbot: QtBot) -> None:
    dialog = ContextBreakdownDialog()
    qtbot.addWidget(dialog)
    dialog.set_compaction(CompactionState())
    assert dialog.compaction.text() == "Nothing to compact yet."
    dialog.set_compaction(None)
    assert dialog.compaction.text() == ""
