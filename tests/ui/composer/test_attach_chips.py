"""The attach chips above the message box: each names where it comes from and what it
costs, × removes it, and the row hides when nothing is staged."""

from __future__ import annotations

from pytestqt.qtbot import QtBot

from treechat.services.merge import StagedAttach
from treechat.services.turns.chat_service import Attachment
from treechat.ui.composer.attach_chips import AttachChipBar, format_tokens


def staged(title: str, tokens: int) -> StagedAttach:
    return StagedAttach(Attachment("s1", f"head-{title}", title, tokens), title,
                        "the last message there", tokens, f"commit-{title}")


def test_token_costs_read_short() -> None:
    assert [format_tokens(n) for n in (1, 2, 1500, 12_000)] == [
        "1 token", "2 tokens", "1.5k tokens", "12k tokens"]


def test_chips_show_their_source_and_cost_and_remove_on_request(qtbot: QtBot) -> None:
    bar = AttachChipBar()
    qtbot.addWidget(bar)
    bar.resize(600, 80)
    assert bar.isHidden()  # nothing staged yet
    first, second = staged("Cats", 1500), staged("Dogs", 3)
    bar.set_staged([first, second])
    assert not bar.isHidden()
    chips = bar.chip_widgets()
    assert [c.source.text() for c in chips] == ["Cats", "Dogs"]
    assert [c.cost.text() for c in chips] == ["1.5k tokens", "3 tokens"]
    assert chips[0].accessibleName() == "Attached: Cats"
    assert "sent once with the next message" in chips[0].toolTip()
    removed: list[StagedAttach] = []
    bar.removeRequested.connect(removed.append)
    chips[1].remove_button.click()
    assert removed == [second]
    bar.set_staged([])
    assert bar.isHidden() and bar.chip_widgets() == []
