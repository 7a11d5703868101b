"""What the approval prompt shows of a tool call: its arguments as the user reads them."""

from __future__ import annotations

import json

from treechat.services.mcp.approval import ApprovalRequest, Decision


def test_the_arguments_read_as_indented_sorted_json_with_their_own_letters() -> None:
    request = ApprovalRequest("chat", "files", "write", "files__write",
                              {"path": "notes/été.md", "append": True})
    text = request.arguments_text()
    assert text.splitlines() == ["{", '  "append": true,', '  "path": "notes/été.md"', "}"]
    assert json.loads(text) == {"path": "notes/été.md", "append": True}


def test_the_three_answers_keep_their_stored_names() -> None:
    assert [d.value for d in Decision] == ["allow_once", "allow_always", "deny"]
