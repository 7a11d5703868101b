"""ChatGPT export parsing, against the real export file and hand-written edge cases."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from treechat.core.dag import Graph, active_path, siblings
from treechat.core.imports import chatgpt
from treechat.core.imports.model import ImportedConversation
from treechat.core.model import Node

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


@pytest.fixture(scope="module")
def export() -> list[dict[str, Any]]:
    data = json.loads((DATA / "chatgpt-export-browsing.json").read_text(encoding="utf-8"))
    assert isinstance(data, list)
    return data


def as_nodes(conv: ImportedConversation) -> list[Node]:
    return [
        Node(
            id=m.source_id, seq=i, created_at=m.created_at, session_id="s", role=m.role,
            name=m.name, input=m.input, output=m.output,
            predecessor=m.parent_source_id if m.edge == "predecessor" else None,
            caller=m.parent_source_id if m.edge == "caller" else None, metadata=m.metadata,
        )
        for i, m in enumerate(conv.nodes)
    ]


def file_chain(conv: dict[str, Any], leaf: str) -> list[str]:
    """Message ids from the root to `leaf`, following the file's own parent pointers."""
    chain = []
    key: str | None = leaf
    while key is not None:
        entry = conv["mapping"][key]
        if entry.get("message") is not None:
            chain.append(key)
        key = entry.get("parent")
    return chain[::-1]


def test_every_message_of_the_real_export_becomes_a_node(
    export: list[dict[str, Any]],
) -> None:
    parsed = chatgpt.parse(export)
    assert parsed.skipped == ()
    assert [c.source_id for c in parsed.conversations] == [c["id"] for c in export]
    for conv, raw in zip(parsed.conversations, export, strict=True):
        with_message = {k for k, v in raw["mapping"].items() if v.get("message") is not None}
        assert len(with_message) == {0: 16, 1: 5}[export.index(raw)]
        assert {n.source_id for n in conv.nodes} == with_message
        assert conv.title == raw["title"]


def test_head_is_current_node_and_the_active_path_is_the_files_thread(
    export: list[dict[str, Any]],
) -> None:
    for conv, raw in zip(chatgpt.parse(export).conversations, export, strict=True):
        assert conv.head_source_id == raw["current_node"]
        path = active_path(Graph(as_nodes(conv)), conv.head_source_id)
        # Tool results come right after the call that produced them, exactly as the file's
        # thread reads, so the user sees the same conversation ChatGPT showed.
        assert [n.id for n in path] == file_chain(raw, raw["current_node"])


def test_tool_traffic_is_paired_with_the_call_that_caused_it(
    export: list[dict[str, Any]],
) -> None:
    raw = export[0]
    mapping = raw["mapping"]
    conv = chatgpt.parse(raw).conversations[0]
    by_id = {n.source_id: n for n in conv.nodes}
    tool_ids = [k for k, v in mapping.items()
                if v.get("message") and v["message"]["author"]["role"] == "tool"]
    call_ids = [k for k, v in mapping.items()
                if v.get("message") and v["message"].get("recipient") not in (None, "all")]
    assert len(tool_ids) == 5 and len(call_ids) == 4
    for cid in call_ids:
        call = by_id[cid]
        assert call.role == "assistant"
        assert call.metadata["recipient"] == "browser"
        assert call.metadata["tool_calls"] == [
            {"id": cid, "name": "browser", "arguments": mapping[cid]["message"]["content"]["text"]}
        ]
        assert call.output == ""  # what it sent is the call's, shown with its result
    answered: dict[str, list[str]] = {}
    for tid in tool_ids:
        tool = by_id[tid]
        assert tool.role == "tool" and tool.name == "browser"
        assert tool.edge == "caller"
        # The caller is the nearest assistant call above the result in the file.
        up = mapping[tid]["parent"]
        while mapping[up]["message"]["author"]["role"] == "tool":
            up = mapping[up]["parent"]
        assert tool.parent_source_id == up
        assert tool.input == mapping[up]["message"]["content"]["text"]
        answered.setdefault(up, []).append(tool.metadata["tool_call_id"])
    assert set(answered) == set(call_ids)
    for cid, ids in answered.items():
        assert ids[0] == cid  # the first result answers the call itself
        assert len(set(ids)) == len(ids)  # later ones are distinct, so none hides another
    quote = next(n for n in conv.nodes if n.metadata.get("content_type") == "tether_quote")
    assert quote.metadata["quote"]["url"].startswith("https://")
    assert quote.metadata["chatgpt"]["command"] == "mclick"


def test_hidden_system_message_is_kept_and_marked(export: list[dict[str, Any]]) -> None:
    for conv, raw in zip(chatgpt.parse(export).conversations, export, strict=True):
        systems = [n for n in conv.nodes if n.role == "system"]
        raw_systems = [k for k, v in raw["mapping"].items()
                       if v.get("message") and v["message"]["author"]["role"] == "system"]
        assert [n.source_id for n in systems] == raw_systems
        assert all(n.metadata["hidden"] is True for n in systems)
        assert systems[0].parent_source_id is None  # the empty root entry carries no message


def test_model_slug_and_timestamps_are_kept(export: list[dict[str, Any]]) -> None:
    conv = chatgpt.parse(export).conversations[1]
    raw = export[1]
    assert conv.model == "text-davinci-002-render-sha"
    assert conv.created_at == raw["create_time"] and conv.updated_at == raw["update_time"]
    for node in conv.nodes:
        message = raw["mapping"][node.source_id]["message"]
        if message["create_time"] is not None:
            assert node.created_at == message["create_time"]
        if node.role == "assistant":
            assert node.name == message["metadata"]["model_slug"]
            assert node.metadata["model"] == message["metadata"]["model_slug"]


def test_single_conversation_object_is_accepted(export: list[dict[str, Any]]) -> None:
    parsed = chatgpt.parse(export[1])
    assert len(parsed.conversations) == 1
    assert len(parsed.conversations[0].nodes) == 5


def test_head_follows_current_node_even_when_it_is_not_the_first_child(
    export: list[dict[str, Any]],
) -> None:
    raw = copy.deepcopy(export[1])
    mapping = raw["mapping"]
    last_user = mapping[raw["current_node"]]["parent"]
    original = raw["current_node"]
    regen = copy.deepcopy(mapping[original])
    regen["id"] = regen["message"]["id"] = "regenerated"
    regen["message"]["create_time"] += 30
    regen["message"]["content"]["parts"] = ["A second answer."]
    mapping["regenerated"] = regen
    mapping[last_user]["children"] = [original, "regenerated"]
    raw["current_node"] = "regenerated"
    conv = chatgpt.parse(raw).conversations[0]
    assert conv.head_source_id == "regenerated"
    assert conv.branches == 2
    graph = Graph(as_nodes(conv))
    assert [n.id for n in siblings(graph, "regenerated")] == [original, "regenerated"]

    raw["current_node"] = original  # and back: HEAD is the pointer, not the newest child
    assert chatgpt.parse(raw).conversations[0].head_source_id == original


def message(
    mid: str, role: str, content: dict[str, Any], *, t: float | None = None,
    recipient: str = "all", name: str | None = None, status: str = "finished_successfully",
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": mid,
        "author": {"role": role, "name": name, "metadata": {}},
        "create_time": t,
        "content": content,
        "status": status,
        "recipient": recipient,
        "metadata": metadata or {},
    }


def conversation(chain: list[tuple[str, str | None, dict[str, Any] | None]],
                 current: str) -> dict[str, Any]:
    mapping: dict[str, Any] = {}
    for mid, parent, msg in chain:
        mapping[mid] = {"id": mid, "message": msg, "parent": parent, "children": []}
    for mid, parent, _ in chain:
        if parent is not None and parent in mapping:
            mapping[parent]["children"].append(mid)
    return {"title": "hand", "create_time": 1.0, "update_time": 9.0, "mapping": mapping,
            "current_node": current, "conversation_id": "conv-hand", "id": "conv-hand"}


def text(value: str) -> dict[str, Any]:
    return {"content_type": "text", "parts": [value]}


def test_code_interpreter_reasoning_and_interrupted_messages() -> None:
    conv = conversation(
        [
            ("root", None, None),
            ("ctx", "root", message("ctx", "user", {
                "content_type": "user_editable_context", "user_profile": "An SRE.",
                "user_instructions": "Be brief."},
                metadata={"is_visually_hidden_from_conversation": True})),
            ("u1", "ctx", message("u1", "user", {
                "content_type": "multimodal_text",
                "parts": [{"content_type": "image_asset_pointer",
                           "asset_pointer": "file-service://file-1"}, "What is in this plot?"],
            }, t=2.0)),
            ("th", "u1", message("th", "assistant", {
                "content_type": "thoughts",
                "thoughts": [{"summary": "Reading", "content": "It is a sine."}]}, t=3.0,
                metadata={"model_slug": "o3"})),
            ("rr", "th", message("rr", "assistant", {
                "content_type": "reasoning_recap", "content": "Thought for 4 seconds"}, t=3.5,
                metadata={"model_slug": "o3"})),
            ("py", "rr", message("py", "assistant", {
                "content_type": "code", "language": "python", "text": "print(1+1)"},
                t=4.0, recipient="python", metadata={"model_slug": "o3"})),
            ("out", "py", message("out", "tool", {
                "content_type": "execution_output", "text": "2"}, t=5.0, name="python")),
            ("a1", "out", message("a1", "assistant", text("It prints 2 and the plot is a sine"),
                                  t=6.0, status="in_progress",
                                  metadata={"model_slug": "o3"})),
        ],
        current="a1",
    )
    parsed = chatgpt.parse([conv])
    assert parsed.skipped == ()
    by_id = {n.source_id: n for n in parsed.conversations[0].nodes}
    assert by_id["ctx"].role == "system" and by_id["ctx"].metadata["hidden"] is True
    assert by_id["ctx"].input == "An SRE.\n\nBe brief."
    assert by_id["u1"].output == "What is in this plot?"  # the image is its card
    placeholder = by_id["u1"].metadata["attachments"][0]
    assert placeholder["placeholder"] is True and placeholder["kind"] == "image"
    assert (placeholder["name"], placeholder["ref"]) == ("file-1", "file-service://file-1")
    # thoughts and the recap are the reasoning of the call they led to, not messages
    assert "th" not in by_id and "rr" not in by_id
    assert by_id["py"].parent_source_id == "u1"
    assert by_id["py"].metadata["reasoning"] == "**Reading**\nIt is a sine."
    assert by_id["py"].metadata["reasoning_recap"] == "Thought for 4 seconds"
    assert by_id["out"].edge == "caller" and by_id["out"].parent_source_id == "py"
    assert by_id["out"].metadata["tool_call_id"] == "py"
    assert by_id["out"].input == "print(1+1)"
    assert by_id["py"].output == ""  # the code is the call's, not prose as well
    assert by_id["a1"].parent_source_id == "py"  # the turn continues from its caller
    assert by_id["a1"].metadata["interrupted"] is True
    assert "interrupted" not in by_id["py"].metadata
    assert parsed.conversations[0].model == "o3"


def test_interrupted_by_finish_details() -> None:
    conv = conversation(
        [("u", None, message("u", "user", text("hi"), t=1.0)),
         ("a", "u", message("a", "assistant", text("Hel"), t=2.0,
                            metadata={"finish_details": {"type": "interrupted"}}))],
        current="a",
    )
    node = chatgpt.parse(conv).conversations[0].nodes[-1]
    assert node.metadata["interrupted"] is True


def test_tool_output_nobody_called_stays_on_the_conversation_edge() -> None:
    conv = conversation(
        [("u", None, message("u", "user", text("summarise my file"), t=1.0)),
         ("fs", "u", message("fs", "tool", text("file contents"), t=2.0,
                             name="myfiles_browser")),
         ("a", "fs", message("a", "assistant", text("It says hello."), t=3.0))],
        current="a",
    )
    by_id = {n.source_id: n for n in chatgpt.parse(conv).conversations[0].nodes}
    assert by_id["fs"].edge == "predecessor" and by_id["fs"].parent_source_id == "u"
    assert "tool_call_id" not in by_id["fs"].metadata
    assert by_id["a"].parent_source_id == "fs"


def test_conversation_without_mapping_is_skipped_and_others_still_import(
    export: list[dict[str, Any]],
) -> None:
    broken = {"title": "Corrupted entry", "id": "broken-1", "create_time": 5.0}
    parsed = chatgpt.parse([broken, export[1]])
    assert len(parsed.conversations) == 1
    assert [(s.source_id, s.conversation) for s in parsed.skipped] == [
        ("broken-1", "Corrupted entry")]
    assert "mapping" in parsed.skipped[0].reason


def test_empty_message_is_dropped_quietly_and_its_reply_rehung() -> None:
    conv = conversation(
        [("u1", None, message("u1", "user", text("first"), t=1.0)),
         ("a1", "u1", message("a1", "assistant", text("reply"), t=2.0)),
         ("u2", "a1", message("u2", "user", text("   "), t=3.0)),
         ("a2", "u2", message("a2", "assistant", text("to nothing"), t=4.0))],
        current="a2",
    )
    parsed = chatgpt.parse(conv)
    assert parsed.skipped == ()  # nothing visible was dropped: the summary says nothing
    by_id = {n.source_id: n for n in parsed.conversations[0].nodes}
    assert set(by_id) == {"u1", "a1", "a2"}
    assert by_id["a2"].parent_source_id == "a1"


def test_missing_parent_and_cycle_are_reported_not_imported() -> None:
    conv = conversation(
        [("u1", None, message("u1", "user", text("ok"), t=1.0)),
         ("a1", "u1", message("a1", "assistant", text("fine"), t=2.0)),
         ("o1", "gone", message("o1", "user", text("orphan"), t=3.0)),
         ("o2", "o1", message("o2", "assistant", text("below orphan"), t=4.0)),
         ("c1", "c2", message("c1", "user", text("loop a"), t=5.0)),
         ("c2", "c1", message("c2", "assistant", text("loop b"), t=6.0))],
        current="a1",
    )
    parsed = chatgpt.parse(conv)
    assert {n.source_id for n in parsed.conversations[0].nodes} == {"u1", "a1"}
    reasons = {s.source_id: s.reason for s in parsed.skipped}
    assert reasons["o1"] == "its parent message gone is not in the file"
    assert "o1" in reasons["o2"] and "not in the file" in reasons["o2"]
    assert reasons["c1"].startswith("parent links form a cycle")
    assert reasons["c2"].startswith("parent links form a cycle")


def test_message_without_content_object_is_dropped_and_head_moves_up() -> None:
    conv = conversation(
        [("u1", None, message("u1", "user", text("ok"), t=1.0)),
         ("a1", "u1", {**message("a1", "assistant", text("x"), t=2.0), "content": None})],
        current="a1",
    )
    parsed = chatgpt.parse(conv)
    assert parsed.skipped == ()
    assert [n.source_id for n in parsed.conversations[0].nodes] == ["u1"]
    assert parsed.conversations[0].head_source_id == "u1"


# --- today's export: reasoning, canvas, web.run, images, files (tests/data/imports) --------


def reasoning_fixture() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = json.loads(
        (DATA / "chatgpt-reasoning-tools.json").read_text(encoding="utf-8"))
    return data


def active_path_of(conv: Any) -> list[Any]:
    by_id = {n.source_id: n for n in conv.nodes}
    node = by_id[conv.head_source_id]
    out = [node]
    while node.parent_source_id is not None:
        node = by_id[node.parent_source_id]
        out.append(node)
    return out[::-1]


def test_thoughts_and_recap_are_the_reasoning_of_the_reply_not_messages() -> None:
    parsed = chatgpt.parse(reasoning_fixture())
    assert parsed.skipped == ()  # what was folded or empty is not reported as lost
    conv = parsed.conversations[0]
    by_id = {n.source_id: n for n in conv.nodes}
    assert not {"th1", "rr1", "empty"} & set(by_id)
    texts = [n.output for n in conv.nodes if n.role == "assistant"]
    assert not any("Thought for" in str(t) or "**Reading the plot**" in str(t) for t in texts)
    first = by_id["py"]  # the first thing the model did after thinking: run code
    assert first.parent_source_id == "u1"
    assert first.metadata["reasoning"] == (
        "**Reading the plot**\nA sine wave with period 2π.\n\n"
        "**Planning**\nRun code to confirm, then search the forecast.")
    assert first.metadata["reasoning_recap"] == "Thought for 29s"


def test_code_web_run_and_canvas_calls_are_tool_nodes_with_caller_edges() -> None:
    conv = chatgpt.parse(reasoning_fixture()).conversations[0]
    by_id = {n.source_id: n for n in conv.nodes}
    calls = {k: by_id[k].metadata["tool_calls"][0] for k in ("py", "web", "cv")}
    assert calls["py"]["name"] == "python" and "math.sin" in calls["py"]["arguments"]
    assert calls["web"] == {"id": "web", "name": "web.run",
                            "arguments": {"search_query": [{"q": "Oslo weather tomorrow"}]}}
    assert calls["cv"]["name"] == "canmore.create_textdoc"
    assert calls["cv"]["arguments"]["name"] == "packing_list"
    for caller, tool in (("py", "out"), ("web", "webres"), ("cv", "cvres")):
        node = by_id[tool]
        assert (node.role, node.edge, node.parent_source_id) == ("tool", "caller", caller)
        assert node.metadata["tool_call_id"] == caller
    assert by_id["out"].output == "1.0" and by_id["webres"].name == "web.run"
    # the empty message that carried the chain is gone; the answer hangs where it belongs
    assert by_id["a1"].parent_source_id == "web"


@pytest.mark.parametrize("recipient", ["python", "web.run", "canmore.create_textdoc",
                                       "myfiles_browser"])
def test_a_message_to_a_tool_is_its_call_once_never_prose_as_well(recipient: str) -> None:
    plot, quote = chatgpt.parse(reasoning_fixture()).conversations
    nodes = {n.source_id: n for n in (*plot.nodes, *quote.nodes)}
    raw = {k: e["message"] for c in reasoning_fixture() for k, e in c["mapping"].items()
           if e.get("message")}
    (key,) = [k for k, m in raw.items() if m.get("recipient") == recipient]
    sent = raw[key]["content"]["text"]
    call = nodes[key]
    assert call.output == ""  # the assistant says nothing of its own here
    (result,) = [n for n in nodes.values() if n.parent_source_id == key and n.edge == "caller"]
    # the tool card shows what was sent: the code with its line breaks, JSON as its object
    shown = result.input if isinstance(result.input, str) else json.dumps(result.input)
    assert json.loads(shown) == json.loads(sent) if sent.startswith("{") else shown == sent
    assert result.input == call.metadata["tool_calls"][0]["arguments"]
    if recipient == "python":
        assert result.input == "import math\nprint(round(math.sin(math.pi/2), 3))"
    texts = [str(n.output) for n in nodes.values() if n.role == "assistant"]
    assert not any(sent in t or (result.input in t if isinstance(result.input, str) else False)
                   for t in texts)


def test_a_dalle_call_is_its_prompt_once_and_its_image_the_tools_result() -> None:
    prompt = {"prompt": "A robin on a branch", "size": "1024x1024"}
    conv = conversation(
        [("u", None, message("u", "user", text("Draw a robin"), t=1.0)),
         ("d", "u", message("d", "assistant", {"content_type": "code", "language": "json",
                                               "text": json.dumps(prompt)},
                            t=2.0, recipient="dalle.text2im")),
         ("img", "d", message("img", "tool", {"content_type": "multimodal_text", "parts": [
             {"content_type": "image_asset_pointer",
              "asset_pointer": "file-service://file-ROBIN"}]}, t=3.0, name="dalle.text2im")),
         ("a", "img", message("a", "assistant", text("Here is your robin."), t=4.0))],
        current="a",
    )
    (parsed,) = chatgpt.parse([conv]).conversations
    by_id = {n.source_id: n for n in parsed.nodes}
    assert by_id["d"].output == "" and by_id["d"].metadata["tool_calls"][0]["arguments"] == prompt
    image = by_id["img"]
    assert (image.role, image.edge, image.parent_source_id, image.input) == (
        "tool", "caller", "d", prompt)
    # a tool's card shows no files, so its text names the image it made
    assert image.output == "[image: file-ROBIN]"
    assert image.metadata["attachments"][0]["name"] == "file-ROBIN"
    assert by_id["a"].parent_source_id == "d"


def test_a_call_no_tool_answered_still_says_what_it_sent() -> None:
    conv = conversation(
        [("u", None, message("u", "user", text("Run it"), t=1.0)),
         ("py", "u", message("py", "assistant", {"content_type": "code", "language": "python",
                                                 "text": "x = 1\nprint(x)"},
                             t=2.0, recipient="python"))],
        current="py",
    )
    (parsed,) = chatgpt.parse([conv]).conversations
    call = next(n for n in parsed.nodes if n.source_id == "py")
    assert call.output == "x = 1\nprint(x)"  # there is no card to show it
    assert call.metadata["tool_calls"][0]["arguments"] == "x = 1\nprint(x)"


def test_active_path_branches_and_head_of_todays_export() -> None:
    conv = chatgpt.parse(reasoning_fixture()).conversations[0]
    assert conv.head_source_id == "a2" and conv.branches == 2
    assert [(n.role, n.source_id) for n in active_path_of(conv)] == [
        ("system", "sys"), ("user", "u1"), ("assistant", "py"), ("assistant", "web"),
        ("assistant", "a1"), ("user", "u2"), ("assistant", "cv"), ("assistant", "a2")]
    by_id = {n.source_id: n for n in conv.nodes}
    assert by_id["a2b"].parent_source_id == "u2"  # the other branch: a plain answer


def test_images_and_uploaded_files_are_named_placeholders() -> None:
    plot, quote = chatgpt.parse(reasoning_fixture()).conversations
    u1 = next(n for n in plot.nodes if n.source_id == "u1")
    (image,) = u1.metadata["attachments"]
    assert image == {"placeholder": True, "kind": "image", "name": "file-PLOT123",
                     "ref": "file-service://file-PLOT123", "size_bytes": 48213,
                     "source": image["source"]}
    # the card names them: the text does not say so again
    assert u1.output == "What does this plot show? Then check tomorrow's weather in Oslo."
    q1 = next(n for n in quote.nodes if n.source_id == "q1")
    assert q1.output == "What does the report say about revenue?"
    assert q1.metadata["attachments"][0]["ref"] == "file-REPORT"
    tether = next(n for n in quote.nodes if n.source_id == "quote")
    assert (tether.role, tether.edge, tether.parent_source_id) == ("tool", "caller", "q1call")
    assert "Revenue grew 12%" in tether.output and tether.metadata["quote"]["title"] == "report.pdf"
