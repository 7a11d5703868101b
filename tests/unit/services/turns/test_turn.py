"""A running turn's record of what it changed is read through the turn."""

from __future__ import annotations

from treechat.core.model import Node
from treechat.services.models.catalog import Endpoint
from treechat.services.turns.changes import ChangeLog
from treechat.services.turns.events import TurnEvent
from treechat.services.turns.turn import Turn
from treechat.tools.base import ToolBox


def test_the_turn_reports_what_its_log_holds() -> None:
    seen: list[TurnEvent] = []
    turn = Turn("s", Endpoint("openai/m", "M", 4096, 512), ToolBox(), seen.append,
                ChangeLog("s"))
    assert turn.changes().nodes == ()
    turn.log.wrote(Node(id="a", seq=1, created_at=0.0, session_id="s", role="assistant"))
    turn.log.recorded("row")
    assert turn.changes().node_ids == ("a",) and turn.changes().usage == ("row",)
