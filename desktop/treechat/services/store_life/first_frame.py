"""What the window shows in its first frame, kept in a file beside the store: the chat list
and the last messages of the chat the window was on, as the store held them when the window
closed. It is read with json and the core types only (no DuckDB, no services), so the first
real frame of the next start already carries them; and it is believed only while the store
file is exactly as it was written after (same size, time and inode, no journal beside it).
Anything else (a `treechat send` meanwhile, a crash, a restored backup) and the window waits
for the store as it would without it."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...core import dag
from ...core.dag import Graph
from ...core.model import GraphError, Node, Session

if TYPE_CHECKING:
    from ...store.database import Store
    from ..turns.sessions import SessionView

log = logging.getLogger(__name__)

FILENAME = "first-frame.json"
STORE_FILENAME = "treechat.duckdb"  # the store's own name, said here without loading DuckDB
VERSION = 1
# messages of the open chat kept: more than a tall screen shows; the rest comes from the store
TAIL = 60


@dataclass(frozen=True)
class FirstFrame:
    """The chat list, and the end of the chat the window reopens (None if it had none)."""

    sessions: tuple[Session, ...]
    view: SessionView | None
    messages: int = 0  # in the whole chat the view is the end of


def store_path_in(data_dir: Path) -> Path:
    return data_dir / STORE_FILENAME


def frame_path(store_path: Path) -> Path:
    return store_path.with_name(FILENAME)


def _identity(store_path: Path) -> list[int] | None:
    """What says the store file is the one the frame was read from; None if it is missing or
    has a journal beside it (its content is not all in the file)."""
    if store_path.with_name(store_path.name + ".wal").exists():
        return None
    try:
        st = store_path.stat()
    except OSError:
        return None
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _node_record(node: Node, *, stub: bool = False) -> dict[str, Any]:
    record = dataclasses.asdict(node)
    if stub:  # another version of a message on the path: counted by `< N/M >`, never shown
        key = node.metadata.get("tool_call_id")
        record.update(name="", input=None, output=None, reads=[],
                      metadata={"tool_call_id": key} if key is not None else {})
    return record


def capture(store: Store, session_id: str | None) -> dict[str, Any]:
    """Read, on the store's worker, what the next start's first frame shows (the store is still
    open: `save` writes it once the store is closed)."""
    from ..turns.sessions import load_view

    def read(repo: Any) -> dict[str, Any]:
        sessions = repo.list_sessions()
        out: dict[str, Any] = {"sessions": [dataclasses.asdict(s) for s in sessions]}
        if session_id and any(s.id == session_id for s in sessions):
            view = load_view(repo, session_id)
            tail = view.path[-TAIL:]
            on_path = {n.id for n in tail}
            stubs: dict[str, Node] = {}
            for node in tail:
                for peer in dag.siblings(view.graph, node.id):
                    if peer.id not in on_path:
                        stubs[peer.id] = peer
            out["view"] = {
                "session": dataclasses.asdict(view.session),
                "path": [_node_record(n) for n in tail],
                "stubs": [_node_record(n, stub=True) for n in stubs.values()],
                "hidden": sorted(view.hidden & (on_path | set(stubs))),
                "pinned": sorted(view.pinned & on_path),
                "messages": sum(1 for n in view.path if n.role in ("user", "assistant")),
            }
        return out

    return store.call(read)


def save(captured: dict[str, Any], store_path: Path) -> None:
    """Write the frame beside the closed store (privately, whole or not at all). A frame
    that cannot be written is left out: the next start reads the store instead."""
    target = frame_path(store_path)
    identity = _identity(store_path)
    with contextlib.suppress(OSError):
        target.unlink()
    if identity is None:
        return
    try:
        text = json.dumps({"version": VERSION, "store": identity, **captured},
                          ensure_ascii=False)
    except (TypeError, ValueError):  # a message holding what json cannot say
        log.info("the first frame was not kept: a message cannot be written as JSON")
        return
    partial = target.with_name(target.name + ".tmp")
    try:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(partial, target)
    except OSError:
        log.warning("could not keep the first frame beside %s", store_path, exc_info=True)
        with contextlib.suppress(OSError):
            partial.unlink()


def _node(record: dict[str, Any]) -> Node:
    return Node(**{**record, "reads": tuple(record.get("reads") or ())})


def load(store_path: Path) -> FirstFrame | None:
    """The frame kept beside `store_path`, or None when there is none or the store has
    changed since (or the file is not one this build wrote)."""
    from ..turns.sessions import SessionView

    identity = _identity(store_path)
    if identity is None:
        return None
    try:
        data = json.loads(frame_path(store_path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("version") != VERSION:
        return None
    if data.get("store") != identity:
        return None
    try:
        sessions = tuple(Session(**s) for s in data["sessions"])
        view, messages = None, 0
        shown = data.get("view")
        if isinstance(shown, dict):
            path = tuple(_node(n) for n in shown["path"])
            graph = Graph([*path, *(_node(n) for n in shown["stubs"])])
            view = SessionView(session=Session(**shown["session"]), graph=graph, path=path,
                               hidden=frozenset(shown["hidden"]),
                               pinned=frozenset(shown["pinned"]))
            messages = int(shown["messages"])
    except (KeyError, TypeError, ValueError, GraphError):
        return None
    return FirstFrame(sessions, view, messages)
