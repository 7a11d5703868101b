"""The words of Settings → Connections' State column: short, with the reason kept for the
tooltip and the status line."""

from __future__ import annotations

from treechat.services.models.connections import Connection as Conn
from treechat.services.models.connections import (
    ConnectionStatus,
    bundled_connection,
)
from treechat.ui.dialogs.connection_states import BUNDLED_STATE, state_line, state_text


def test_the_column_is_short_and_the_reason_goes_to_the_whole_line() -> None:
    lab = Conn(id="lab", kind="openai-compatible", label="lab", base_url="http://h:1/v1")
    down = ConnectionStatus(lab, "unreachable", "connection refused")
    assert state_text(down) == "Unreachable · no models listed"
    assert state_line(down) == "Unreachable · no models listed · connection refused"
    assert state_text(ConnectionStatus(lab, "detected")) == "Detected on this machine · " \
        "no models listed"
    bundled = ConnectionStatus(bundled_connection(), "ready")
    assert state_text(bundled) == BUNDLED_STATE == "Ready · works offline"
