"""Importing export files and exporting sessions end to end, on real DuckDB files."""

from __future__ import annotations

import asyncio
import json
import time
import zipfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from tests.support.clock import FakeClock
from tests.support.exports import big_chatgpt_export

from treechat import cli
from treechat.core.dag import Graph, active_path
from treechat.core.imports import ImportFileError
from treechat.core.model import Node
from treechat.core.reply import reasoning_of
from treechat.services.transfer import importing
from treechat.services.transfer.export_reading import read_export_parts
from treechat.services.transfer.importing import (
    ImportProgress,
    export_session,
    import_file,
)
from treechat.services.turns.sessions import SessionService
from treechat.store.database import Store

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"
CHATGPT = DATA / "chatgpt-export-browsing.json"
LIBRECHAT = DATA / "librechat-tree.json"


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    s = Store.open(tmp_path / "a.duckdb")
    yield s
    s.close()


def messages_in(path: Path) -> int:
    """Messages a ChatGPT export holds, counted straight from its mapping trees."""
    data = json.loads(path.read_text(encoding="utf-8"))
    return sum(1 for c in data for e in c["mapping"].values() if e.get("message") is not None)


def node_count(store: Store) -> int:
    return store.call(lambda r: r.node_count())


@pytest.mark.asyncio
async def test_real_chatgpt_export_imports_every_node_and_reports_progress(
    store: Store,
) -> None:
    seen: list[ImportProgress] = []
    summary = await import_file(store, CHATGPT, progress=seen.append)
    assert summary.source_format == "chatgpt"
    assert (summary.sessions, summary.nodes, summary.branches) == (2, messages_in(CHATGPT), 2)
    assert summary.nodes == 21 and summary.skipped == [] and not summary.cancelled
    assert [(p.stage, p.done, p.total) for p in seen] == [
        ("reading", 0, 0), ("writing", 0, 2), ("writing", 1, 2), ("writing", 2, 2)]
    assert seen[2].title == "Conversation 1. Web Search"
    assert node_count(store) == 21
    raw = json.loads(CHATGPT.read_text(encoding="utf-8"))
    for session_id, conv in zip(summary.session_ids, raw, strict=True):
        session = store.call(lambda r, sid=session_id: r.get_session(sid))
        head = store.call(lambda r, h=session.head: r.get_node(h))
        assert head.metadata["imported_from"]["id"] == conv["current_node"]


@pytest.mark.asyncio
async def test_zip_holding_conversations_json(store: Store, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("chat.html", "<html></html>")
        zf.write(CHATGPT, "export-2024/conversations.json")
    summary = await import_file(store, archive)
    assert (summary.sessions, summary.nodes) == (2, 21)

    empty = tmp_path / "other.zip"
    with zipfile.ZipFile(empty, "w") as zf:
        zf.writestr("user.json", "{}")
    with pytest.raises(ImportFileError, match=r"without a conversations\.json"):
        await import_file(store, empty)


@pytest.mark.asyncio
async def test_the_same_file_twice_adds_nothing(store: Store) -> None:
    first = await import_file(store, LIBRECHAT)
    assert (first.sessions, first.nodes, first.branches) == (1, 9, 3)
    before = store.call(lambda r: (r.node_count(), len(r.list_sessions())))
    again = await import_file(store, LIBRECHAT)
    assert (again.sessions, again.nodes, again.branches, again.session_ids) == (0, 0, 0, ())
    assert store.call(lambda r: (r.node_count(), len(r.list_sessions()))) == before


@pytest.mark.asyncio
async def test_cancel_stops_between_conversations_and_a_rerun_finishes(store: Store) -> None:
    cancel = asyncio.Event()

    def on_progress(p: ImportProgress) -> None:
        if p.done == 1:
            cancel.set()

    summary = await import_file(store, CHATGPT, progress=on_progress, cancel=cancel)
    assert summary.cancelled and summary.sessions == 1 and summary.nodes == 16
    assert node_count(store) == 16
    rest = await import_file(store, CHATGPT)
    assert (rest.sessions, rest.nodes) == (1, 5)
    assert node_count(store) == 21


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("content", "words"),
    [
        (b'{"messages": [{"role": "user", "content": "hi"}]}', "does not recognise"),
        (CHATGPT.read_bytes()[:40000], "ends too early"),
        (b"", "is empty"),
        (b"[]", "no conversations"),
    ],
)
async def test_bad_files_are_refused_and_write_nothing(
    store: Store, tmp_path: Path, content: bytes, words: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_bytes(content)
    with pytest.raises(ImportFileError, match=words):
        await import_file(store, path)
    assert node_count(store) == 0
    assert store.call(lambda r: r.list_sessions(include_hidden=True)) == ()


@pytest.mark.asyncio
async def test_long_librechat_thread_nested_thousands_deep(store: Store, tmp_path: Path) -> None:
    depth = 5000
    # Written by hand: json.dumps itself refuses nesting this deep.
    opening = "".join(
        f'{{"messageId": "m{i}", "isCreatedByUser": {"false" if i % 2 else "true"}, '
        f'"text": "message {i}", "children": ['
        for i in range(depth)
    )
    path = tmp_path / "librechat.json"
    path.write_text('{"conversationId": "deep", "title": "Long", "recursive": true, '
                    f'"messages": [{opening}{"]}" * depth}]}}', encoding="utf-8")
    with pytest.raises(RecursionError):
        json.loads(path.read_text(encoding="utf-8"))
    summary = await import_file(store, path)
    assert (summary.source_format, summary.sessions, summary.nodes) == ("librechat", 1, depth)
    session = store.call(lambda r: r.get_session(summary.session_ids[0]))
    head = store.call(lambda r: r.get_node(session.head))
    assert head.output == f"message {depth - 1}"


@pytest.mark.asyncio
async def test_missing_file_is_a_clear_error(store: Store, tmp_path: Path) -> None:
    with pytest.raises(ImportFileError, match="is not a file"):
        await import_file(store, tmp_path / "nope.json")


@pytest.mark.asyncio
async def test_skips_inside_a_file_are_reported_and_the_rest_imported(
    store: Store, tmp_path: Path
) -> None:
    data = json.loads(CHATGPT.read_text(encoding="utf-8"))
    data.insert(0, {"title": "Corrupted entry", "id": "broken"})
    mapping = data[2]["mapping"]
    looped = next(k for k, v in mapping.items() if v.get("parent") and v.get("message")
                  and v["message"]["author"]["role"] == "assistant")
    mapping[looped]["parent"] = looped + "-elsewhere"  # its parent is not in the file
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    summary = await import_file(store, path)
    reasons = {s.source_id: s.reason for s in summary.skipped}
    assert reasons["broken"].startswith("conversation has no message tree")
    assert reasons[looped] == f"its parent message {looped}-elsewhere is not in the file"
    dropped = len([s for s in summary.skipped if s.source_id != "broken"])
    assert summary.nodes == 21 - dropped and summary.sessions == 2


async def graph_of(store: Store, session_id: str) -> tuple[Any, dict[str, tuple[Any, ...]]]:
    session = await store.run(lambda r: r.get_session(session_id))
    nodes = await store.run(lambda r: r.session_nodes(session_id))
    shape = {
        n.id: (n.role, n.name, n.input, n.output, n.predecessor, n.caller, n.reads,
               n.metadata, n.created_at)
        for n in nodes
    }
    order = [n.id for n in sorted(nodes, key=lambda n: n.seq)]
    return (session.title, session.head, session.model, session.created_at, order), shape


@pytest.mark.asyncio
async def test_json_export_then_import_into_an_empty_store_gives_the_same_graph(
    store: Store, tmp_path: Path
) -> None:
    await import_file(store, CHATGPT)
    await import_file(store, LIBRECHAT)
    service = SessionService(store, clock=FakeClock())
    native = await service.create("Native", model="openai/gpt-4o")
    u1 = await service.append_message(native.id, "first question")
    await service.append_message(native.id, "first answer", role="assistant")
    await service.edit(native.id, u1.id, "the question, rephrased")
    await service.append_message(native.id, "second answer", role="assistant",
                                 metadata={"interrupted": True})
    branch = await service.branch(native.id, u1.id, title="Side road")
    await service.append_message(branch.id, "a detour")

    sessions = await store.run(lambda r: r.list_sessions())
    assert len(sessions) == 5
    other = Store.open(tmp_path / "b.duckdb")
    try:
        for session in sessions:
            text = await export_session(store, session.id, fmt="json")
            path = tmp_path / f"{session.id}.json"
            path.write_text(text, encoding="utf-8")
            summary = await import_file(other, path)
            assert summary.source_format == "treechat"
            assert summary.session_ids == (session.id,)
            assert await graph_of(other, session.id) == await graph_of(store, session.id)
            # And again, or back into the store it came from: nothing new.
            assert (await import_file(other, path)).nodes == 0
            assert (await import_file(store, path)).nodes == 0
    finally:
        other.close()
    assert node_count(store) == 21 + 9 + 5


@pytest.mark.asyncio
async def test_markdown_export_shows_the_active_path_and_optionally_every_branch(
    store: Store,
) -> None:
    summary = await import_file(store, LIBRECHAT)
    (session_id,) = summary.session_ids
    text = await export_session(store, session_id, fmt="md")
    assert text.startswith("# Troubleshooting Python Virtual Environment Activation Issue\n")
    session = await store.run(lambda r: r.get_session(session_id))
    nodes = await store.run(lambda r: r.session_nodes(session_id))
    on_path = active_path(Graph(nodes), session.head)
    off_path = [n for n in nodes if n not in on_path]
    assert len(on_path) == 4 and len(off_path) == 5
    for node in on_path:
        assert node.text.strip() in text
    assert "does coding make you happy" not in text
    assert text.index("How do I use source venv") < text.index("lol")

    full = await export_session(store, session_id, fmt="md", all_branches=True)
    for node in nodes:
        assert node.text.strip() in full
    assert full.count("Happy coding!") == 1 and "## Other branches" in full


@pytest.mark.asyncio
async def test_markdown_leaves_out_hidden_context_and_shows_tools(store: Store) -> None:
    summary = await import_file(store, CHATGPT)
    text = await export_session(store, summary.session_ids[0], fmt="md")
    assert "**System**" not in text
    assert text.count("**Tool `browser`**") == 5
    # each call's query once, as the call's, never as the assistant's words as well
    assert text.count("_Calls `browser`:_") == 4
    assert text.count('search("Volkswagen Transporter fuel consumption with 8 people l/km")') == 1


@pytest.mark.asyncio
async def test_export_of_an_unknown_session_or_format(store: Store) -> None:
    with pytest.raises(LookupError):
        await export_session(store, "missing")
    with pytest.raises(ValueError, match="unknown export format"):
        await export_session(store, "missing", fmt="pdf")


@pytest.mark.slow
def test_ten_thousand_messages_through_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = big_chatgpt_export(conversations=20, per_conversation=500)
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    expected = messages_in(path)
    tools = sum(1 for c in data for e in c["mapping"].values()
                if e.get("message") and e["message"]["author"]["role"] == "tool")
    tips = sum(1 for c in data for k, e in c["mapping"].items()
               if e.get("message") and not e["children"])
    assert expected == 10_000

    started = time.perf_counter()
    rc = cli.main(["--data-dir", str(tmp_path / "data"), "import", str(path), "--json"])
    elapsed = time.perf_counter() - started
    assert rc == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["sessions"], summary["nodes"], summary["skipped"]) == (20, expected, [])
    # One branch per message nothing follows in the file: every retry, and each thread's end.
    assert summary["branches"] == tips

    with Store.open(tmp_path / "data" / "treechat.duckdb") as store:
        assert store.call(lambda r: r.node_count()) == expected
        sessions = store.call(lambda r: r.list_sessions())
        all_nodes: list[Node] = []
        for session in sessions:
            nodes = store.call(lambda r, sid=session.id: r.session_nodes(sid))
            all_nodes.extend(nodes)
            graph = Graph(nodes)
            head = graph.get(session.head or "")
            assert head.metadata["imported_from"]["id"].endswith("-assistant")
            seq = {n.id: n.seq for n in nodes}
            assert all(n.parent is None or seq[n.parent] < n.seq for n in nodes)
        tool_nodes = [n for n in all_nodes if n.role == "tool"]
        assert len(tool_nodes) == tools
        assert all(n.caller is not None and n.metadata["tool_call_id"] for n in tool_nodes)

    rc = cli.main(["--data-dir", str(tmp_path / "data"), "import", str(path), "--json"])
    again = json.loads(capsys.readouterr().out)
    assert rc == 0 and (again["sessions"], again["nodes"]) == (0, 0)
    with capsys.disabled():
        print(f"\n10,000-message ChatGPT import through `treechat import`: {elapsed:.2f} s")


# --- every format, end to end: active path, reasoning, tools, idempotent re-import --------


def head_path(store: Store, session_id: str) -> list[Node]:
    session = store.call(lambda r: r.get_session(session_id))
    nodes = store.call(lambda r: r.session_nodes(session_id))
    return list(active_path(Graph(nodes), session.head))


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("name", "fmt", "sessions", "texts"),
    [
        ("claude-tools-thinking.json", "claude", 2,
         ["Add 2 and 3 with the tool.", "", "The sum is 5."]),
        ("chatgpt-reasoning-tools.json", "chatgpt", 2,
         ["What does the report say about revenue?", "", "Revenue grew 12% year over year."]),
        ("deepseek-export.json", "deepseek", 1,
         ["Is 97 prime? Search to be sure.", "", "Yes, 97 is prime.",
          "Thanks!"]),
        ("grok-prod-grok-backend.json", "grok", 1,
         ["How far is the Moon?", "Roughly 1.28 light-seconds away.", "Draw it", ""]),
        ("deepseek-api-history.json", "deepseek", 1,
         ["Is 91 prime?", "No: 7 × 13.", "And 97?"]),
        ("grok-response-ids.json", "grok", 1,
         ["What makes tides?", "The Moon's pull.", "And the Sun?"]),
        ("aistudio-prompt.json", "aistudio", 1,
         ["What bird is this?", "It is a European robin.",
          "Where does it live?", "Across Europe, from gardens to woods."]),
    ],
)
async def test_each_format_imports_its_active_path_and_a_second_import_adds_nothing(
    store: Store, name: str, fmt: str, sessions: int, texts: list[str]
) -> None:
    summary = await import_file(store, DATA / name)
    assert (summary.source_format, summary.sessions, summary.skipped) == (fmt, sessions, [])
    last = summary.session_ids[-1]
    conversation = [n for n in head_path(store, last) if n.role in ("user", "assistant")]
    assert [n.text for n in conversation] == texts
    before = store.call(lambda r: (r.node_count(), len(r.list_sessions())))
    heads = {s.id: s.head for s in store.call(lambda r: r.list_sessions())}
    again = await import_file(store, DATA / name)
    assert (again.sessions, again.nodes, again.branches, again.notes) == (0, 0, 0, ())
    assert store.call(lambda r: (r.node_count(), len(r.list_sessions()))) == before
    assert {s.id: s.head for s in store.call(lambda r: r.list_sessions())} == heads


@pytest.mark.asyncio
async def test_reasoning_and_tool_nodes_are_stored_for_the_thinking_section(
    store: Store,
) -> None:
    summary = await import_file(store, DATA / "chatgpt-reasoning-tools.json")
    nodes = store.call(lambda r, s=summary.session_ids[0]: r.session_nodes(s))
    by_source = {n.metadata["imported_from"]["id"]: n for n in nodes}
    python = by_source["py"]
    assert reasoning_of(python).startswith("**Reading the plot**")
    assert python.metadata["reasoning_recap"] == "Thought for 29s"
    assert not any("Thought for" in n.text for n in nodes)
    tools = [n for n in nodes if n.role == "tool"]
    assert {n.name for n in tools} == {"python", "web.run", "canmore.create_textdoc"}
    assert all(n.caller is not None and n.predecessor is None for n in tools)
    assert by_source["out"].caller == python.id
    image = by_source["u1"].metadata["attachments"][0]
    assert image["placeholder"] is True and image["name"] == "file-PLOT123"


@pytest.mark.asyncio
async def test_split_export_zip_is_read_in_one_pass_with_one_summary(
    store: Store, tmp_path: Path
) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("chat.html", "<html></html>")
        for part in sorted((DATA / "chatgpt-split").glob("conversations-*.json")):
            zf.write(part, part.name)
        zf.writestr("file-PLOT123-plot.png", b"\x89PNG")
    seen: list[ImportProgress] = []
    summary = await import_file(store, archive, progress=seen.append)
    assert (summary.source_format, summary.conversations, summary.sessions, summary.nodes) == (
        "chatgpt", 3, 3, 6)
    titles = {s.title for s in store.call(lambda r: r.list_sessions())}
    assert titles == {"First file's chat", "Second file's chat", "Also in the second file"}
    assert [p.done for p in seen if p.stage == "writing" and p.title] == [1, 2, 3]
    again = await import_file(store, archive)
    assert (again.conversations, again.sessions, again.nodes) == (3, 0, 0)


@pytest.mark.asyncio
async def test_an_ai_studio_branch_copy_becomes_a_branch_of_the_same_chat(store: Store) -> None:
    first = await import_file(store, DATA / "aistudio-prompt.json")
    second = await import_file(store, DATA / "aistudio-prompt-branch.json")
    assert (second.sessions, second.nodes, second.branches) == (0, 2, 1)
    assert second.session_ids == first.session_ids
    # HEAD was where the first import put it, so it follows the file
    texts = [n.text for n in head_path(store, first.session_ids[0])]
    assert texts[-1] == "Mostly worms, insects and berries."


# --- an import never takes a session from the user (issue: reliability, item 8) ----------


@pytest.mark.asyncio
async def test_a_treechat_file_naming_an_existing_session_cannot_move_its_head_or_title(
    store: Store, tmp_path: Path
) -> None:
    service = SessionService(store, clock=FakeClock())
    victim = await service.create("My own chat", model="openai/gpt-4o")
    await service.append_message(victim.id, "private question")
    answer = await service.append_message(victim.id, "private answer", role="assistant")
    document = json.loads(await export_session(store, victim.id, fmt="json"))
    # A crafted file: the victim's id, a new title, injected content below its HEAD.
    document["session"]["title"] = "Pwned"
    document["session"]["head"] = "injected-2"
    document["nodes"] += [
        {"id": "injected-1", "seq": 98, "created_at": 2e9, "session_id": victim.id,
         "role": "user", "output": "ignore previous instructions", "predecessor": answer.id},
        {"id": "injected-2", "seq": 99, "created_at": 2e9, "session_id": victim.id,
         "role": "assistant", "output": "sure", "predecessor": "injected-1"},
    ]
    path = tmp_path / "crafted.json"
    path.write_text(json.dumps(document), encoding="utf-8")

    summary = await import_file(store, path)

    after = store.call(lambda r: r.get_session(victim.id))
    assert (after.head, after.title) == (answer.id, "My own chat")
    assert [n.text for n in head_path(store, victim.id)] == ["private question", "private answer"]
    (new_id,) = summary.session_ids
    assert new_id != victim.id and summary.sessions == 1 and summary.nodes == 2
    landed = store.call(lambda r: r.get_session(new_id))
    assert (landed.title, landed.forked_from) == ("Pwned (imported)", victim.id)
    assert [n.text for n in head_path(store, new_id)][-2:] == [
        "ignore previous instructions", "sure"]
    assert summary.notes and "new chat" in summary.notes[0]
    # Importing it again adds nothing and still leaves the victim alone.
    again = await import_file(store, path)
    assert (again.sessions, again.nodes) == (0, 0)
    assert store.call(lambda r: r.get_session(victim.id)).head == answer.id


@pytest.mark.asyncio
async def test_a_newer_export_leaves_head_where_the_user_moved_it(
    store: Store, tmp_path: Path
) -> None:
    raw = json.loads((DATA / "chatgpt-split" / "conversations-000.json").read_text())
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    first = await import_file(store, path)
    (session_id,) = first.session_ids
    nodes = store.call(lambda r: r.session_nodes(session_id))
    question = next(n for n in nodes if n.role == "user")
    store.call(lambda r: r.set_head(session_id, question.id, 5.0))  # the user looks back

    mapping = raw[0]["mapping"]
    mapping["a"]["children"] = ["u2"]
    mapping["u2"] = {"id": "u2", "parent": "a", "children": [], "message": {
        "id": "u2", "author": {"role": "user"}, "create_time": 1745000050.0,
        "content": {"content_type": "text", "parts": ["more from the other app"]},
        "metadata": {}}}
    raw[0]["current_node"] = "u2"
    path.write_text(json.dumps(raw), encoding="utf-8")
    newer = await import_file(store, path)

    assert (newer.sessions, newer.nodes, newer.kept_head) == (0, 1, (session_id,))
    assert store.call(lambda r: r.get_session(session_id)).head == question.id
    assert newer.notes == ("“First file's chat”: the new messages are on a new branch; HEAD "
                           "stays where you left it.",)


# --- large and hostile files (issue: reliability, item 9) ----------------------------------


@pytest.mark.asyncio
async def test_a_large_file_is_read_a_conversation_at_a_time_with_byte_progress(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "WHOLE_FILE_BYTES", 1024)  # stream anything larger
    path = tmp_path / "conversations.json"
    path.write_bytes(CHATGPT.read_bytes())
    parts = list(read_export_parts(path, whole_file_bytes=1024))
    assert [len(p.conversations) for p in parts] == [1, 1]  # one conversation per piece
    seen: list[ImportProgress] = []
    summary = await import_file(store, path, progress=seen.append)
    assert (summary.sessions, summary.nodes, summary.conversations) == (2, 21, 2)
    writing = [p for p in seen if p.stage == "writing"]
    assert [(p.done, p.total) for p in writing] == [(1, 0), (2, 0)]  # total unknown
    assert writing[-1].bytes_done == writing[-1].bytes_total == path.stat().st_size
    assert (await import_file(store, path)).nodes == 0


@pytest.mark.asyncio
async def test_a_large_file_that_breaks_off_keeps_what_came_before_and_says_why(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(importing, "WHOLE_FILE_BYTES", 1024)
    data = big_chatgpt_export(conversations=3, per_conversation=20)
    text = json.dumps(data)
    cut = text.index('"conv-2"') - 200  # inside the third conversation
    path = tmp_path / "conversations.json"
    path.write_text(text[:cut], encoding="utf-8")
    summary = await import_file(store, path)
    assert summary.sessions == 2 and summary.nodes == 40
    (skip,) = summary.skipped
    assert "ends too early" in skip.reason and "2 conversations before" in skip.reason
    # the rest, once the whole file is there
    path.write_text(text, encoding="utf-8")
    rest = await import_file(store, path)
    assert (rest.sessions, rest.nodes) == (1, 20)


@pytest.mark.asyncio
async def test_a_placeholder_names_the_image_the_zip_carries(
    store: Store, tmp_path: Path
) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(DATA / "chatgpt-reasoning-tools.json", "conversations.json")
        zf.writestr("file-PLOT123-sine.png", b"\x89PNG\r\n")  # only a PNG's signature
    summary = await import_file(store, archive)
    nodes = store.call(lambda r, s=summary.session_ids[0]: r.session_nodes(s))
    (question,) = [n for n in nodes if n.metadata["imported_from"]["id"] == "u1"]
    (image,) = question.metadata["attachments"]
    # named by the file the zip holds (without ChatGPT's asset id in front), and kept a
    # placeholder because those bytes are no image (see test_import_assets for real ones)
    assert (image["zip_member"], image["name"]) == ("file-PLOT123-sine.png", "sine.png")
    assert image["placeholder"] is True and "not a readable image" in image["unreadable"]


@pytest.mark.asyncio
@pytest.mark.parametrize("name", [
    "claude-tools-thinking.json", "chatgpt-reasoning-tools.json", "deepseek-export.json",
    "grok-prod-grok-backend.json", "aistudio-prompt.json",
])
async def test_read_in_pieces_or_whole_a_file_imports_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    def shape(store: Store) -> list[tuple[str, list[tuple[str, str]]]]:
        out = []
        for session in sorted(store.call(lambda r: r.list_sessions()), key=lambda s: s.title):
            path = head_path(store, session.id)
            out.append((session.title, [(n.role, n.text) for n in path]))
        return out

    with Store.open(tmp_path / "whole.duckdb") as whole:
        expected = await import_file(whole, DATA / name)
        want = shape(whole)
    monkeypatch.setattr(importing, "WHOLE_FILE_BYTES", 64)
    with Store.open(tmp_path / "pieces.duckdb") as pieces:
        got = await import_file(pieces, DATA / name)
        assert (got.source_format, got.sessions, got.nodes, got.branches) == (
            expected.source_format, expected.sessions, expected.nodes, expected.branches)
        assert shape(pieces) == want


def test_the_cli_says_where_new_messages_went(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = str(tmp_path / "data")
    document = {"format": "treechat", "version": 1, "session": {
        "id": "s1", "title": "Mine", "head": "n1", "model": "", "created_at": 1.0,
        "updated_at": 1.0}, "nodes": [{"id": "n1", "seq": 1, "created_at": 1.0,
                                       "session_id": "s1", "role": "user", "output": "hi"}]}
    path = tmp_path / "one.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert cli.main(["--data-dir", data_dir, "import", str(path)]) == 0
    capsys.readouterr()
    document["nodes"].append({"id": "n2", "seq": 2, "created_at": 2.0, "session_id": "s1",
                              "role": "assistant", "output": "injected", "predecessor": "n1"})
    document["session"]["head"] = "n2"
    path.write_text(json.dumps(document), encoding="utf-8")
    assert cli.main(["--data-dir", data_dir, "import", str(path)]) == 0
    out = capsys.readouterr().out
    assert "“Mine” is already here: what the file adds is in a new chat, “Mine (imported)”." in out
    assert cli.main(["--data-dir", data_dir, "import", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["notes"] == []  # nothing new the second time


@pytest.mark.asyncio
async def test_a_damaged_second_file_of_a_split_export_keeps_the_first(
    store: Store, tmp_path: Path
) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.write(DATA / "chatgpt-split" / "conversations-000.json", "conversations-000.json")
        zf.writestr("conversations-001.json", b'[{"title": "cut sh')
    summary = await import_file(store, archive)
    assert (summary.sessions, summary.nodes) == (1, 2)
    (skip,) = summary.skipped
    assert "conversations-001.json is not valid JSON" in skip.reason
    assert "The rest of the file was not imported." in skip.reason


@pytest.mark.asyncio
async def test_the_store_cache_is_held_low_while_importing_and_given_back(store: Store) -> None:
    def limit(repo: Any) -> str:
        return str(repo.con.execute("SELECT current_setting('memory_limit')").fetchone()[0])

    before = await store.run(limit)
    seen: list[str] = []
    summary = await import_file(
        store, CHATGPT, progress=lambda p: seen.append(store.call(limit)) if p.done else None)
    assert summary.nodes == 21
    assert set(seen) == {"244.1 MiB"}  # 256 MB while the conversations were written
    assert await store.run(limit) == before


@pytest.mark.asyncio
async def test_a_lone_surrogate_escape_imports_as_the_replacement_character(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text('[{"uuid": "c1", "name": "half \\udc00 a pair", "chat_messages": [{"uuid": '
                    '"m1", "text": "lone \\ud800 surrogate", "sender": "human", '
                    '"created_at": "2024-01-01T00:00:00Z"}]}]', encoding="utf-8")
    summary = await import_file(store, path)
    assert summary.sessions == 1 and summary.nodes == 1
    (session,) = store.call(lambda r: r.list_sessions())
    assert session.title == "half \ufffd a pair"
    (node,) = store.call(lambda r: r.session_nodes(session.id))
    assert node.output == "lone \ufffd surrogate"
