"""Three computers change the same history apart (new chats, replies on the same chat,
renames, pins, deletions), sync in any order, some uploads dropped half-way: in the end all
three hold the same nodes and the same shared state, with nothing lost and nothing twice."""

from __future__ import annotations

import asyncio
import contextlib
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tests.support.clock import FakeClock
from tests.support.sync_devices import (
    Device,
    connect,
    graph_of,
    make_device,
    shared_state,
    start_target,
)

from treechat.services.sync.service import SyncError
from treechat.services.sync.targets import FolderTarget
from treechat.store import chat_settings

DEVICES = 3
words = st.sampled_from(["alpha", "beta", "gamma", "delta", "notes", "plan", "räksmörgås"])
pick = st.integers(min_value=0, max_value=50)
steps = st.lists(
    st.one_of(
        st.tuples(st.just("new"), st.integers(0, DEVICES - 1), words),
        st.tuples(st.just("reply"), st.integers(0, DEVICES - 1), pick, words),
        st.tuples(st.just("rename"), st.integers(0, DEVICES - 1), pick, words),
        st.tuples(st.just("pin"), st.integers(0, DEVICES - 1), pick, st.booleans()),
        st.tuples(st.just("hide"), st.integers(0, DEVICES - 1), pick, st.booleans()),
        st.tuples(st.just("pin_node"), st.integers(0, DEVICES - 1), pick),
        st.tuples(st.just("hide_branch"), st.integers(0, DEVICES - 1), pick),
        st.tuples(st.just("sync"), st.integers(0, DEVICES - 1),
                  st.one_of(st.none(), st.integers(0, 3)), st.booleans()),
    ),
    min_size=1,
    max_size=24,
)


async def _apply(device: Device, step: tuple[Any, ...], clock: FakeClock,
                 written: set[str]) -> None:
    kind = step[0]
    clock.advance(1.0)
    if kind == "new":
        session = await device.sessions.create(title=step[2])
        node = await device.sessions.append_message(session.id, f"hello {step[2]}")
        written.add(node.id)
        return
    if kind == "sync":
        device.target.fail_after = step[2]
        device.target.reverse = step[3]
        # a dropped upload: what was sent stays sent, the rest goes next time
        with contextlib.suppress(SyncError):
            await device.sync.sync_now()
        device.target.fail_after = None
        return
    chats = await device.sessions.list(include_hidden=True)
    if not chats:
        return
    chat = sorted(chats, key=lambda s: s.id)[step[2] % len(chats)]
    if kind == "reply":
        node = await device.sessions.append_message(chat.id, step[3])
        written.add(node.id)
    elif kind == "rename":
        await device.sessions.rename(chat.id, f"{step[3]} {device.name}")
    elif kind == "pin":
        now = clock.now()
        await device.store.run(lambda r: chat_settings.set_session_mark(
            r, chat.id, now=now, pinned=step[3]))
    elif kind == "hide":
        await (device.sessions.delete(chat.id) if step[3] else device.sessions.restore(chat.id))
    elif kind == "pin_node" and chat.head is not None:
        await device.sessions.annotate(chat.id, chat.head, "pin")
    elif kind == "hide_branch" and chat.head is not None:
        await device.sessions.annotate(chat.id, chat.head, "hidden")


@pytest.mark.slow
@settings(max_examples=12, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(steps=steps, final_order=st.permutations(list(range(DEVICES))))
def test_three_computers_converge(steps: list[tuple[Any, ...]], final_order: list[int]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(_run(Path(tmp), steps, final_order))


async def _run(root: Path, steps: list[tuple[Any, ...]], final_order: list[int]) -> None:
    (root / "target").mkdir()
    target = FolderTarget(root / "target")
    start_target(target)
    clock = FakeClock()
    devices = [make_device(root, f"pc{i}", target, clock) for i in range(DEVICES)]
    written: set[str] = set()
    try:
        for d in devices:
            await connect(d, str(root / "target"))
        for step in steps:
            await _apply(devices[step[1]], step, clock, written)
        # everyone syncs twice round: the first round sends, the second takes in the rest
        for _ in range(2):
            for i in final_order:
                clock.advance(1.0)
                await devices[i].sync.sync_now()
        graphs = [graph_of(d.store) for d in devices]
        states = [shared_state(d.store) for d in devices]
        for graph in graphs:
            assert graph["rows"] == len(graph["nodes"])  # nothing twice
            assert set(graph["nodes"]) == written  # nothing lost, nothing made up
        assert graphs[0] == graphs[1] == graphs[2]
        assert states[0] == states[1] == states[2]
        for d in devices:  # each computer's HEADs are on nodes it holds
            heads = d.store.call(lambda r: [s.head for s in r.list_sessions(True)])
            assert all(h is None or h in written for h in heads)
        # syncing again changes nothing and sends nothing
        again = await devices[0].sync.sync_now()
        assert (again.sent_nodes, again.received_nodes, again.changed) == (0, 0, ())
    finally:
        for d in devices:
            d.close()
