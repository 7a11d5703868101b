"""What a turn changed, so a view redraws from that instead of diffing whole snapshots: the
nodes the turn wrote, the head it left, the session's row as the turn left it and the usage
rows it recorded. The turn's last event (`TurnFinished` or `TurnFailed`) carries it."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from ...core.model import Node, Session

if TYPE_CHECKING:  # named only: the window's first frame imports this before DuckDB loads
    from ...store import usage as ledger
    from ...store.repository import Repository


@dataclass(frozen=True, slots=True)
class TurnChanges:
    """`nodes` in the order they were written (the user message a send or edit committed,
    then every reply, tool result or interrupted partial); `head` the session's HEAD after
    the last of them (None when the turn wrote nothing); `usage` the ids of the ledger rows
    its requests left; `model` the model the session was switched to (None: unchanged).
    `session` (the chat's row as the turn left it: title, HEAD, model, time) and `records`
    (the ledger rows `usage` names) are read back once the turn is over (`read_back`);
    until then `session` is None."""

    session_id: str
    nodes: tuple[Node, ...] = ()
    head: str | None = None
    usage: tuple[str, ...] = ()
    model: str | None = None
    session: Session | None = None
    records: tuple[ledger.UsageRecord, ...] = ()

    @property
    def node_ids(self) -> tuple[str, ...]:
        return tuple(n.id for n in self.nodes)

    @property
    def wrote(self) -> bool:
        """Whether the graph or the ledger moved (a view with nothing to redraw skips it)."""
        return bool(self.nodes or self.usage or self.model is not None)

    @property
    def complete(self) -> bool:
        """Whether a view can redraw from this alone: the session's row and every usage
        row are here (a view that cannot says so and reads the session again)."""
        return (self.session is not None and self.session.id == self.session_id
                and tuple(r.id for r in self.records) == self.usage)


@dataclass(frozen=True, slots=True)
class HeadChanges:
    """What moving HEAD across a graph the caller holds changed (a version switch): the new
    HEAD and the session's row as stored after it. The graph did not change, so a view that
    holds it redraws from this alone."""

    session: Session

    @property
    def head(self) -> str | None:
        return self.session.head


def read_back(repo: Repository, changes: TurnChanges) -> TurnChanges:
    """`changes` with the session's row as stored now and the usage rows it names: two
    small reads on the store's worker, never the session's graph."""
    session = repo.get_session(changes.session_id)
    from ...store.usage import usage_by_id  # on the store's worker, where DuckDB is loaded

    found = {r.id: r for r in usage_by_id(repo, changes.usage)}
    records = tuple(found[i] for i in changes.usage if i in found)
    return replace(changes, session=session, records=records)


class ChangeLog:
    """Collects a running turn's changes as they happen; `changes()` is the record so far."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self._nodes: list[Node] = []
        self._head: str | None = None
        self._usage: list[str] = []
        self._model: str | None = None

    def wrote(self, node: Node, *, moves_head: bool = True) -> None:
        self._nodes.append(node)
        if moves_head:
            self._head = node.id

    def recorded(self, usage_id: str) -> None:
        self._usage.append(usage_id)

    def switched_model(self, model: str) -> None:
        self._model = model

    def changes(self) -> TurnChanges:
        return TurnChanges(self.session_id, tuple(self._nodes), self._head,
                           tuple(self._usage), self._model)
