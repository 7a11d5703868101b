"""A process killed with SIGKILL mid-reply loses nothing: the typed message and the partial
reply are there when the store is opened again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from treechat.core.dag import Graph, active_path
from treechat.services.store_life.recovery import open_and_recover

CHILD = textwrap.dedent("""
    import asyncio, sys
    from pathlib import Path
    from treechat.store.database import Store
    from treechat.services.turns.sessions import SessionService
    from treechat.services.store_life.drafts import DraftWriter

    async def main() -> None:
        store = Store.open(Path(sys.argv[1]))
        sessions = SessionService(store)
        session = await sessions.create("Crash")
        user = await sessions.append_message(session.id, "the question I typed")
        draft = DraftWriter(store, draft_id="d1", session_id=session.id, parent_id=user.id,
                            model="openai/test", interval=0.05)
        await draft.start()
        for i in range(100000):
            draft.add(f"word{i} ")
            if i == 40:
                await draft.flush()
                print("streaming", flush=True)
            await asyncio.sleep(0.002)

    asyncio.run(main())
""")


def test_kill_9_mid_reply_keeps_message_and_partial_reply(tmp_path: Path) -> None:
    path = tmp_path / "crash.duckdb"
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)], stdout=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "streaming"
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=30)
    child.stdout.close()

    store = open_and_recover(path)
    try:
        (session,) = store.call(lambda r: r.list_sessions())
        nodes = store.call(lambda r: r.session_nodes(session.id))
        path_nodes = active_path(Graph(nodes), session.head)
        assert [n.role for n in path_nodes] == ["user", "assistant"]
        user, reply = path_nodes
        assert user.output == "the question I typed"
        assert reply.interrupted
        assert reply.text.startswith("word0 word1 ") and "word40 " in reply.text
        assert store.call(lambda r: r.drafts()) == ()
        assert len(nodes) == 2  # nothing else appeared, nothing was lost
    finally:
        store.close()
