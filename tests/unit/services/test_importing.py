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
from treechat.services.importing import (
    ImportProgress,
    export_session,
    import_file,
)
from treechat.services.sessions import SessionService
from treechat.store.database import Store

DATA = Path(__file__).resolve().parents[3] / ".." / "shared" / "data" / "imports"
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
    assert "_Calls `browser`._" in text


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
