"""What a node dragged out of the graph (or a session out of the list) carries, and how a
drop target reads it back."""

from __future__ import annotations

import json

from PySide6.QtCore import QMimeData

NODE_MIME = "application/x-treechat-node"



def node_mime(session_id: str, node_id: str) -> QMimeData:
    """What a dragged node carries: enough for the composer to stage an attach."""
    data = QMimeData()
    data.setData(NODE_MIME, json.dumps({"session_id": session_id, "node_id": node_id}).encode())
    data.setText(f"treechat:{session_id}/{node_id}")
    return data


def read_node_mime(data: QMimeData) -> tuple[str, str | None] | None:
    """(session id, node id or None for the session's HEAD) from a drop, or None."""
    if not data.hasFormat(NODE_MIME):
        return None
    try:
        record = json.loads(bytes(data.data(NODE_MIME).data()).decode())
        return str(record["session_id"]), record.get("node_id") or None
    except (ValueError, KeyError, TypeError):
        return None


