"""Regenerates the history graph screenshots (docs/screenshots/graph-*.png): a session with
retries, an edit, tool calls, an attach from another chat and a merge, zoomed in and out, the
commit timeline, an attach chip, and a 3,000-node session zoomed out; light and dark.

    xvfb-run -s "-screen 0 1600x1000x24" .venv/bin/python docs/screenshots/capture_graph.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path

import qasync
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from treechat.app import connect_services, create_window
from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import ModelChoice
from treechat.store.database import Store, default_store_path

OUT = Path(__file__).resolve().parent
ROOT = OUT.parents[1]
sys.path.insert(0, str(ROOT))
MODEL = "anthropic/claude-sonnet-4-5"

# (id, role, parent, text[, extra]) in the order they were written
STEPS: list[tuple[str, str, str | None, str, dict[str, object]]] = [
    ("u1", "user", None, "We need a cache in front of the search API. What are our options?", {}),
    ("a1", "assistant", "u1", "Three realistic options: an in-process LRU, Redis, or caching "
     "at the CDN edge. For per-user results Redis is the usual fit.", {}),
    ("a1b", "assistant", "u1", "Start with an in-process LRU: zero new infrastructure, and "
     "you can measure the hit rate before committing to Redis.", {}),
    ("u2", "user", "a1", "Go deeper on Redis: eviction and TTLs for our setup.", {}),
    ("a2", "assistant", "u2", "Let me read your current Redis config and TTL usage.",
     {"tool_calls": [{"id": "c1", "name": "read_file"}, {"id": "c2", "name": "search_files"}]}),
    ("t1", "tool", "a2", "maxmemory 2gb\nmaxmemory-policy noeviction",
     {"name": "read_file", "input": {"path": "deploy/redis.conf"}, "tool_call_id": "c1"}),
    ("t2", "tool", "a2", "api/search.py:88: cache.set(key, value, ex=86400)",
     {"name": "search_files", "input": {"pattern": "ex="}, "tool_call_id": "c2"}),
    ("a2c", "assistant", "a2", "Your Redis refuses writes when full (`noeviction`) and search "
     "results live for a day. Switch to `allkeys-lru` and a 10-minute TTL.", {}),
    ("u3", "user", "a2c", "How do we invalidate on writes?", {}),
    ("a3", "assistant", "u3", "Tag each cached query with the index version and bump the "
     "version on every write: stale keys simply stop being read.", {}),
    ("u3b", "user", "a2c", "How do we invalidate when the index is rebuilt nightly?", {}),
    ("a3b", "assistant", "u3b", "Key the cache by the rebuild's generation id; the nightly job "
     "writes a new generation and the old keys age out with the TTL.", {}),
    ("u4", "user", "a3b", "And for partial rebuilds during the day?", {}),
    ("a4", "assistant", "u4", "Give each shard its own generation so a partial rebuild only "
     "retires the keys of the shards it touched.", {}),
    ("at1", "runtime", "a4", "“Design notes” at: key naming rules",
     {"name": "attach", "source": "notes"}),
    ("u5", "user", "at1", "Use the design notes to pick a key scheme.", {}),
    ("a5", "assistant", "u5", "Following the notes: `search:{tenant}:{shard}:{gen}:{hash}`, "
     "lowercase, colon-separated, hash of the normalized query.", {}),
    ("mat", "runtime", "a5", "the branch “Tag each cached query with the index version”",
     {"name": "attach", "merge": "m1", "peer": "a3"}),
    ("m1", "runtime", "mat", "Combine the write-time invalidation with the generation scheme.",
     {"name": "merge", "peers": ["a3"]}),
    ("a6", "assistant", "m1", "Merged: keys carry the shard generation (nightly and partial "
     "rebuilds) and a per-tenant version bumped on writes.", {}),
    ("u7", "user", "a6", "Write the key builder as a small function with tests.", {}),
    ("a7", "assistant", "u7", "Here is `cache_key()` with a table of test cases.", {}),
    ("a7b", "assistant", "u7", "Here is `cache_key()` plus property tests with hypothesis.", {}),
    ("u8", "user", "a7b", "Looks good. What should we monitor after rollout?", {}),
    ("a8", "assistant", "u8", "Hit rate per tenant, evictions per minute, p95 latency with "
     "and without a hit, and Redis memory headroom.", {}),
]


def seed(data_dir: Path, now: float) -> tuple[str, str]:
    store = Store.open(default_store_path(data_dir))
    notes = Session("notes", "Design notes", None, MODEL, now - 9000, updated_at=now - 9000)
    main = Session("cache", "Caching the search API", None, MODEL, now - 4000,
                   updated_at=now - 60)
    big = Session("big", "A very long exploration (3,000 nodes)", None, MODEL, now - 20000,
                  updated_at=now - 20000)
    store.call(lambda r: r.create_sessions([notes, main, big]))
    n1 = Node("n1", 0, now - 9000, "notes", "user", output="What are our key naming rules?")
    n2 = Node("n2", 0, now - 8990, "notes", "assistant", predecessor="n1",
              output="Key naming rules: lowercase, colon-separated, tenant first, and never "
                     "put raw user input in a key: hash it.")
    store.call(lambda r: r.apply_change("notes", Change((n1, n2), "n2"), now - 8990))
    nodes = []
    for i, (nid, role, parent, text, extra) in enumerate(STEPS):
        meta: dict[str, object] = {}
        kw: dict[str, object] = {}
        if role == "tool":
            kw["caller"] = parent
            kw["name"] = extra["name"]
            kw["input"] = extra["input"]
            meta["tool_call_id"] = extra["tool_call_id"]
        else:
            kw["predecessor"] = parent
        if role == "assistant":
            kw["name"] = MODEL
            meta["model"] = MODEL
            if "tool_calls" in extra:
                meta["tool_calls"] = extra["tool_calls"]
        if role == "runtime":
            kw["name"] = extra["name"]
            if extra["name"] == "attach" and extra.get("source") == "notes":
                meta.update(source_session="notes", source_head="n2")
            elif extra["name"] == "attach":
                meta.update(source_session="cache", source_head=extra["peer"],
                            merge=extra["merge"])
            else:
                meta["peers"] = [{"source_session": "cache", "source_head": p}
                                 for p in extra["peers"]]  # type: ignore[union-attr]
                meta["base_peer"] = {"source_head": "a5"}
        nodes.append(Node(nid, 0, now - 4000 + i * 90, "cache", role, output=text,  # type: ignore[arg-type]
                          metadata=meta, **kw))  # type: ignore[arg-type]
    store.call(lambda r: r.apply_change("cache", Change(tuple(nodes), "a6"), now - 60))
    from tests.support.synthetic_graph import conversation

    many = conversation(3000, session_id="big")
    store.call(lambda r: r.apply_change("big", Change(tuple(many), many[-2].id), now - 100))
    store.close()
    return "cache", "big"


async def shoot(widget: object, name: str, wait: float = 0.5) -> None:
    await asyncio.sleep(wait)
    QApplication.processEvents()
    path = OUT / f"{name}.png"
    widget.grab().save(str(path))  # type: ignore[attr-defined]
    print("wrote", path)


async def scenario(app: QApplication, data_dir: Path, main_id: str, big_id: str) -> None:
    services = build_services(data_dir, bundled=False, detect_local_servers=False,
                              extra_models=(ModelChoice(MODEL, "Claude Sonnet 4.5",
                                                        "anthropic"),),
                              keys=KeyStore(environ={}))
    services.models.default_model = MODEL
    window, prefs, theme = create_window(app, data_dir)
    window.resize(1440, 860)
    controller = connect_services(window, services, prefs, theme)
    window.show()
    await controller.start()
    panels = controller.history
    window.dock.show()
    window.resizeDocks([window.dock], [520], Qt.Orientation.Horizontal)
    window.sessions.select(main_id)
    await controller.load_session(main_id)
    await controller.tasks.idle()
    view = panels.graph.view
    for mode in ("light", "dark"):
        theme.set_mode(mode)
        await asyncio.sleep(0.2)
        view.fit_all()
        await shoot(window, f"graph-window-{mode}")
        view.center_on_node("m1", 1.6)
        await shoot(panels.graph, f"graph-zoomed-in-{mode}")
    theme.set_mode("light")
    view.select(["a7", "a7b"])
    view.center_on_node("u7", 1.3)
    await shoot(panels.graph, "graph-merge-selection")
    view.select(())
    window.dock_tabs.setCurrentWidget(panels.timeline)
    await controller.tasks.idle()
    await asyncio.sleep(0.3)
    panels.timeline.select_source("n2")
    await shoot(window, "graph-context")
    window.dock_tabs.setCurrentWidget(panels.graph)
    panels.stage("notes", None)
    await controller.tasks.idle()
    window.composer.set_text("Check this against the design notes, please.")
    await shoot(window, "graph-attach-chip")
    window.composer.set_text("")
    window.sessions.select(big_id)
    await controller.load_session(big_id)
    await controller.tasks.idle()
    for mode in ("light", "dark"):
        theme.set_mode(mode)
        view.fit_all()
        await shoot(panels.graph, f"graph-overview-{mode}")
    theme.set_mode("light")
    view.set_zoom(0.3)
    await shoot(panels.graph, "graph-mid-zoom")
    await controller.close()
    await services.close()
    services.close_store()
    window.close_now()


def main() -> int:
    app = QApplication(sys.argv[:1])
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        main_id, big_id = seed(data_dir, time.time())
        loop = qasync.QEventLoop(app)
        asyncio.set_event_loop(loop)
        try:
            loop.run_until_complete(scenario(app, data_dir, main_id, big_id))
        finally:
            loop.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
