"""Two computers syncing through a folder: what one writes appears on the other, encrypted on
the way; a damaged, truncated or foreign segment is refused and reported, never imported; a
wrong passphrase imports nothing."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.clock import FakeClock
from tests.support.sync_devices import (
    PASSPHRASE,
    Device,
    connect,
    graph_of,
    make_device,
    shared_state,
    start_target,
)

from treechat.core.model import Node
from treechat.services.sync.service import SyncError
from treechat.services.sync.targets import FolderTarget


@pytest_asyncio.fixture
async def pair(tmp_path: Path) -> AsyncIterator[tuple[Device, Device, FakeClock]]:
    (tmp_path / "target").mkdir()
    target = FolderTarget(tmp_path / "target")
    start_target(target)
    clock = FakeClock()
    a = make_device(tmp_path, "laptop", target, clock)
    b = make_device(tmp_path, "desktop", target, clock)
    await connect(a, str(tmp_path / "target"))
    await connect(b, str(tmp_path / "target"))
    try:
        yield a, b, clock
    finally:
        a.close()
        b.close()


def segment_files(root: Path) -> list[Path]:
    return sorted(p for p in (root / "segments").rglob("*.tcs"))


@pytest.mark.asyncio
async def test_a_chat_written_on_one_computer_appears_on_the_other(
    pair: tuple[Device, Device, FakeClock], tmp_path: Path
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Trip to Lisbon")
    first = await a.sessions.append_message(chat.id, "Which museums open on Mondays?")
    clock.advance(1)
    reply = await a.sessions.append_message(chat.id, "The Gulbenkian does.", role="assistant")
    sent = await a.sync.sync_now()
    assert sent.sent_nodes == 2
    got = await b.sync.sync_now()
    assert got.received_nodes == 2
    assert got.new_chats == ("Trip to Lisbon",)
    there = await b.sessions.get(chat.id)
    assert there is not None and there.title == "Trip to Lisbon" and there.head == reply.id
    view = await b.sessions.view(chat.id)
    assert [view.graph.nodes[i].text for i in (first.id, reply.id)] == [
        "Which museums open on Mondays?", "The Gulbenkian does."]
    assert graph_of(a.store) == graph_of(b.store)
    assert {first.id, reply.id} <= set(graph_of(b.store)["nodes"])
    # the target holds nothing readable: no text, no title, no ids
    for path in (tmp_path / "target").rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in (b"Lisbon", b"museums", b"Gulbenkian", chat.id.encode(),
                           first.id.encode()):
                assert secret not in data
            assert chat.id not in str(path) and "laptop" not in str(path)
    # a second sync has nothing to do
    again = await b.sync.sync_now()
    assert (again.sent_nodes, again.received_nodes, again.changed) == (0, 0, ())


@pytest.mark.asyncio
async def test_a_title_edited_on_both_converges_and_keeps_both_edits(
    pair: tuple[Device, Device, FakeClock],
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Draft")
    await a.sessions.append_message(chat.id, "hello")
    await a.sync.sync_now()
    await b.sync.sync_now()
    clock.advance(5)
    await a.sessions.rename(chat.id, "Named on the laptop")
    clock.advance(5)
    await b.sessions.rename(chat.id, "Named on the desktop")
    reports = []
    for device in (a, b, a):
        clock.advance(1)
        reports.append(await device.sync.sync_now())
    # the desktop keeps its later edit; the laptop takes it, and says so once
    assert [r.changed for r in reports] == [(), (), (f"title/{chat.id}",)]
    titles = [(await d.sessions.get(chat.id)).title for d in (a, b)]  # type: ignore[union-attr]
    assert titles == ["Named on the desktop", "Named on the desktop"]  # the later edit wins
    for device in (a, b):
        history = await device.sync.title_history(chat.id)
        assert [(who, title) for _, who, title in history] == [
            ("laptop", "Draft"), ("laptop", "Named on the laptop"),
            ("desktop", "Named on the desktop")]


@pytest.mark.asyncio
async def test_a_reply_written_elsewhere_moves_head_only_along_the_same_branch(
    pair: tuple[Device, Device, FakeClock],
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Branches")
    root = await a.sessions.append_message(chat.id, "start")
    await a.sync.sync_now()
    await b.sync.sync_now()
    clock.advance(1)
    on_b = await b.sessions.append_message(chat.id, "continued on the desktop")
    await b.sync.sync_now()
    await a.sync.sync_now()
    assert (await a.sessions.get(chat.id)).head == on_b.id  # type: ignore[union-attr]
    # both reply apart under the same message: each keeps its own, the other is a sibling
    clock.advance(1)
    mine = await a.sessions.append_message(chat.id, "laptop's answer", parent=on_b.id,
                                           use_parent=True)
    theirs = await b.sessions.append_message(chat.id, "desktop's answer", parent=on_b.id,
                                             use_parent=True)
    for device in (a, b, a):
        clock.advance(1)
        await device.sync.sync_now()
    assert (await a.sessions.get(chat.id)).head == mine.id  # type: ignore[union-attr]
    assert (await b.sessions.get(chat.id)).head == theirs.id  # type: ignore[union-attr]
    view = await a.sessions.view(chat.id)
    assert {mine.id, theirs.id, root.id} <= {n.id for n in view.graph.nodes.values()}


@pytest.mark.asyncio
async def test_a_damaged_or_truncated_segment_is_refused_and_reported_never_imported(
    pair: tuple[Device, Device, FakeClock], tmp_path: Path
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Fragile")
    await a.sessions.append_message(chat.id, "one")
    await a.sync.sync_now()
    (segment,) = segment_files(tmp_path / "target")
    good = segment.read_bytes()
    for bad in (good[: len(good) // 2], good[:-1] + bytes([good[-1] ^ 1])):
        segment.write_bytes(bad)
        report = await b.sync.sync_now()
        assert report.received_nodes == 0
        assert [r.path for r in report.refused] == [
            segment.relative_to(tmp_path / "target").as_posix()]
        assert graph_of(b.store)["rows"] == 0
        assert await b.sessions.list(include_hidden=True) == ()
    # a segment copied under another's name does not open either
    clock.advance(1)
    await a.sessions.append_message(chat.id, "two")
    await a.sync.sync_now()
    other = next(p for p in segment_files(tmp_path / "target") if p != segment)
    segment.write_bytes(other.read_bytes())
    report = await b.sync.sync_now()
    assert segment.relative_to(tmp_path / "target").as_posix() in {r.path for r in report.refused}
    # once the whole file is back it comes in
    segment.write_bytes(good)
    report = await b.sync.sync_now()
    assert report.refused == ()
    assert graph_of(b.store) == graph_of(a.store)


@pytest.mark.asyncio
async def test_a_wrong_passphrase_is_refused_with_one_line_and_imports_nothing(
    pair: tuple[Device, Device, FakeClock], tmp_path: Path
) -> None:
    a, _, clock = pair
    chat = await a.sessions.create(title="Secret plans")
    await a.sessions.append_message(chat.id, "nobody else reads this")
    await a.sync.sync_now()
    c = make_device(tmp_path, "intruder", FolderTarget(tmp_path / "target"), clock)
    try:
        with pytest.raises(SyncError) as refused:
            await connect(c, str(tmp_path / "target"), passphrase="not the passphrase")
        assert str(refused.value) == "wrong passphrase for this sync target; nothing was imported"
        # a passphrase changed in the keychain later is refused the same way
        await connect(c, str(tmp_path / "target"))
        c.keyring.passwords[("treechat", "sync-passphrase")] = "changed"
        with pytest.raises(SyncError, match="wrong passphrase"):
            await c.sync.sync_now()
        assert graph_of(c.store)["rows"] == 0
        assert await c.sessions.list(include_hidden=True) == ()
        assert (await c.sync.status()).error.startswith("wrong passphrase")
    finally:
        c.close()


@pytest.mark.asyncio
async def test_an_interrupted_upload_is_finished_by_the_next_sync(
    pair: tuple[Device, Device, FakeClock],
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Flaky line")
    data = b"\x89PNG fake image bytes" * 100
    sha = hashlib.sha256(data).hexdigest()
    await a.store.run(lambda r: r.put_attachment(sha, "image/png", data, clock.now()))
    node = Node(id="n-with-file", seq=0, created_at=clock.now(), session_id=chat.id,
                role="user", output="see the picture",
                metadata={"attachments": [{"sha256": sha, "name": "p.png",
                                           "media_type": "image/png", "size": len(data)}]})
    await a.store.run(lambda r: r.apply_change(chat.id, _change(node), clock.now()))
    a.target.fail_after = 1  # the attachment goes up, the segment does not
    with pytest.raises(SyncError, match="connection dropped"):
        await a.sync.sync_now()
    a.target.fail_after = None
    nothing = await b.sync.sync_now()
    assert nothing.received_nodes == 0
    await a.sync.sync_now()
    report = await b.sync.sync_now()
    assert report.received_nodes == 1
    assert await b.store.run(lambda r: r.attachment_bytes(sha)) == data
    assert graph_of(a.store) == graph_of(b.store)
    assert shared_state(a.store) == shared_state(b.store)


def _change(node: Node) -> object:
    from treechat.core.dag import Change

    return Change((node,), node.id)


@pytest.mark.asyncio
async def test_pins_deletions_and_settings_travel(
    pair: tuple[Device, Device, FakeClock],
) -> None:
    from treechat.core.chat_settings import preset_from_dict
    from treechat.services.turns.chat_settings import ChatSettingsService
    from treechat.store import chat_settings

    a, b, clock = pair
    keep = await a.sessions.create(title="Keep")
    gone = await a.sessions.create(title="Gone")
    node = await a.sessions.append_message(keep.id, "pin me")
    await a.store.run(lambda r: chat_settings.set_session_mark(r, keep.id, now=clock.now(),
                                                               pinned=True, favourite=True))
    await a.sessions.annotate(keep.id, node.id, "pin")
    await a.sessions.delete(gone.id)
    await ChatSettingsService(a.store, clock=clock).update(keep.id, instructions="Be brief.")
    for name in ("Terse", "Scratch"):
        preset = preset_from_dict({"name": name, "system_prompt": f"{name} answers."})
        await a.store.run(lambda r, p=preset: chat_settings.save_preset(r, p, clock.now()))
    connections = [{"name": "lab", "kind": "openai-compatible",
                    "base_url": "http://127.0.0.1:8080/v1"}]
    await a.store.run(lambda r: r.set_setting("connections", connections))
    await a.sync.sync_now()
    await b.sync.sync_now()
    assert shared_state(a.store) == shared_state(b.store)
    settings = await ChatSettingsService(b.store, clock=clock).current(keep.id)
    assert settings.instructions == "Be brief."
    assert await b.store.run(lambda r: r.get_setting("connections")) == connections
    # a preset deleted on one computer is deleted on the other, not brought back
    clock.advance(1)
    await b.store.run(lambda r: chat_settings.delete_preset(r, "Scratch"))
    await b.sync.sync_now()
    await a.sync.sync_now()
    for device in (a, b):
        names = await device.store.run(lambda r: [p.name for p in chat_settings.user_presets(r)])
        assert names == ["Terse"]
    marks = await b.store.run(lambda r: chat_settings.session_marks_of(r, keep.id))
    assert (marks.pinned, marks.favourite) == (True, True)
    assert [s.id for s in await b.sessions.list()] == [keep.id]
    assert PASSPHRASE not in repr(await b.sync.status())


@pytest.mark.asyncio
async def test_a_commit_travels_and_the_other_computer_builds_on_it(
    pair: tuple[Device, Device, FakeClock],
) -> None:
    from treechat.providers.tokenizer import CachedTiktokenCounter
    from treechat.services.context import ContextEngine
    from treechat.store import commits

    a, b, clock = pair
    chat = await a.sessions.create(title="Snapshots")
    await a.sessions.append_message(chat.id, "What is in the request?")
    reply = await a.sessions.append_message(chat.id, "Everything so far.", role="assistant")
    counter = CachedTiktokenCounter()
    made = await ContextEngine(a.store, counter).ensure_latest_commit(chat.id, now=clock.now())
    assert made is not None
    await a.sync.sync_now()
    await b.sync.sync_now()
    there = await b.store.run(lambda r: commits.load_commit(r, made.id))
    assert there is not None and there.head_node_id == reply.id
    assert [(i.source_node_id, i.rendered) for i in there.items] == [
        (i.source_node_id, i.rendered) for i in made.items]
    # the desktop goes on from it: its next commit has the earlier one as parent
    clock.advance(1)
    more = await b.sessions.append_message(chat.id, "And one more question")
    next_commit = await ContextEngine(b.store, counter).ensure_latest_commit(
        chat.id, now=clock.now())
    assert next_commit is not None and next_commit.head_node_id == more.id
    assert made.id in next_commit.parent_ids
    assert len(next_commit.items) == len(made.items) + 1


@pytest.mark.asyncio
async def test_a_new_target_gets_the_whole_history_again(
    pair: tuple[Device, Device, FakeClock], tmp_path: Path
) -> None:
    a, b, clock = pair
    chat = await a.sessions.create(title="Moves house")
    await a.sessions.append_message(chat.id, "first written here")
    await a.sync.sync_now()
    await b.sync.sync_now()
    clock.advance(1)
    await b.sessions.append_message(chat.id, "then written on the desktop")
    await b.sync.sync_now()
    await a.sync.sync_now()
    # both move to a new, empty folder: each sends everything it has, its own or not
    (tmp_path / "new").mkdir()
    start_target(FolderTarget(tmp_path / "new"))
    for device in (a, b):
        device.target.inner = FolderTarget(tmp_path / "new")
        await connect(device, str(tmp_path / "new"))
    c = make_device(tmp_path, "third", FolderTarget(tmp_path / "new"), clock)
    try:
        await connect(c, str(tmp_path / "new"))
        sent = await a.sync.sync_now()
        assert sent.sent_nodes == 2
        got = await c.sync.sync_now()
        assert got.received_nodes == 2 and got.new_chats == ("Moves house",)
        assert graph_of(c.store) == graph_of(a.store) == graph_of(b.store)
    finally:
        c.close()


@pytest.mark.asyncio
async def test_a_pipe_or_an_oversized_file_among_the_segments_is_passed_over(
    pair: tuple[Device, Device, FakeClock], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os

    from treechat.core.bounded_read import Bounds
    from treechat.services.sync import targets

    # small bounds for the test: a file past 1 MB, or a pipe silent for 1 s, is refused
    monkeypatch.setattr(targets, "FILE_BOUNDS", Bounds(cap=1024 * 1024, deadline=5.0, idle=1.0))
    a, b, _clock = pair
    chat = await a.sessions.create(title="Kept")
    await a.sessions.append_message(chat.id, "one")
    await a.sync.sync_now()
    (segment,) = segment_files(tmp_path / "target")
    folder = segment.parent
    os.mkfifo(folder / "pipe.tcs")  # no program writes to it: reading would wait for ever
    with open(folder / "huge.tcs", "wb") as f:  # sparse: 5 GB on paper
        f.truncate(5 * 1024**3)
    report = await b.sync.sync_now()
    refused = {r.path.rpartition("/")[2]: r.reason for r in report.refused}
    assert set(refused) == {"pipe.tcs", "huge.tcs"}
    assert "pipe that no program wrote to" in refused["pipe.tcs"]
    assert "larger than 1 MB" in refused["huge.tcs"]
    assert graph_of(b.store) == graph_of(a.store)  # the good segment came in all the same
