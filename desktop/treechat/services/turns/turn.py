"""What one running turn carries from step to step: its session, the model it talks to, the
tools offered, where its events go, and the changes it has made so far."""

from __future__ import annotations

from dataclasses import dataclass

from ...tools.base import ToolBox
from ..models.catalog import Endpoint
from .changes import ChangeLog, TurnChanges
from .events import EventSink


@dataclass(frozen=True, slots=True)
class Turn:
    session_id: str
    endpoint: Endpoint
    toolbox: ToolBox
    sink: EventSink
    log: ChangeLog

    def changes(self) -> TurnChanges:
        return self.log.changes()
