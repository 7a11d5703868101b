"""The first frame kept beside the store: it brings back the chat list and the end of the open
chat as the store held them (versions counted as in the store), privately; and it is not
believed once the store has changed, or when it is not one this build wrote."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
from pathlib import Path

from treechat.core.dag import Change
from treechat.core.model import Node, Role, Session
from treechat.services.store_life import first_frame
from treechat.services.store_life.first_frame import capture, frame_path, load, save
from treechat.services.turns.sessions import load_view
from treechat.store.database import STORE_FILENAME, Store, default_store_path

ROOT = Path(__file__).resolve().parents[4]


def node(nid: str, role: Role, pred: str | None, text: str, seq: int = 0) -> Node:
    return Node(id=nid, seq=seq, created_at=1.0, session_id="chat", role=role,
                output=text, predecessor=pred, metadata={"model": "m"} if role != "user" else {})


def seeded(tmp_path: Path, messages: int = 6) -> Store:
    store = Store.open(default_store_path(tmp_path))
    store.call(lambda r: r.create_sessions([
        Session("chat", "The chat", None, "openai/gpt-4o", 1.0, updated_at=5.0),
        Session("other", "Another chat", None, "m", 1.0, updated_at=3.0),
    ]))
    nodes, prev = [], None
    for i in range(messages):
        n = node(f"n{i}", "user" if i % 2 == 0 else "assistant", prev, f"message {i}")
        nodes.append(n)
        prev = n.id
    store.call(lambda r: r.apply_change("chat", Change(tuple(nodes), prev), 2.0))
    return store


def kept(tmp_path: Path, store: Store, session_id: str | None = "chat") -> Path:
    captured = capture(store, session_id)
    store.close()
    save(captured, store.path)
    return frame_path(store.path)


def test_the_kept_frame_brings_back_the_list_and_the_end_of_the_chat(tmp_path: Path) -> None:
    store = seeded(tmp_path, messages=first_frame.TAIL + 10)
    full = store.call(lambda r: load_view(r, "chat"))
    listed = store.call(lambda r: r.list_sessions())
    path = kept(tmp_path, store)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600  # chat text: the owner's only
    frame = load(store.path)
    assert frame is not None
    assert frame.sessions == listed
    assert frame.view is not None
    assert frame.view.session == full.session
    assert frame.view.path == full.path[-first_frame.TAIL:]  # the last screenfuls, exactly
    assert frame.messages == first_frame.TAIL + 10  # and how many the whole chat has


def test_versions_of_the_messages_shown_are_counted_as_in_the_store(tmp_path: Path) -> None:
    store = seeded(tmp_path, messages=4)
    # two more versions of the last reply, and an edit of the first question
    retries = [node("r1", "assistant", "n2", "a retry", 1), node("r2", "assistant", "n2",
                                                                  "another", 2)]
    store.call(lambda r: r.apply_change("chat", Change(tuple(retries), "n3"), 3.0))
    store.call(lambda r: r.apply_change("chat", Change((node("e0", "user", None, "edit"),),
                                                       "n3"), 3.0))
    full = store.call(lambda r: load_view(r, "chat"))
    kept(tmp_path, store)
    frame = load(store.path)
    assert frame is not None and frame.view is not None
    for n in frame.view.path:
        assert frame.view.version(n.id) == full.version(n.id)
    assert frame.view.version("n3")[1] == 3
    # the other versions are there to be counted, not shown: their text is not kept
    assert "a retry" not in frame_path(store.path).read_text()


def test_a_store_changed_since_is_read_instead(tmp_path: Path) -> None:
    store = seeded(tmp_path)
    kept(tmp_path, store)
    assert load(store.path) is not None
    again = Store.open(store.path)  # a `treechat send` meanwhile
    again.call(lambda r: r.apply_change(
        "chat", Change((node("late", "user", "n5", "written later"),), "late"), 9.0))
    again.close()
    assert load(store.path) is None


def test_a_store_with_a_journal_beside_it_is_read_instead(tmp_path: Path) -> None:
    store = seeded(tmp_path)
    kept(tmp_path, store)
    store.path.with_name(store.path.name + ".wal").write_bytes(b"")
    assert load(store.path) is None


def test_a_frame_this_build_did_not_write_is_ignored(tmp_path: Path) -> None:
    store = seeded(tmp_path)
    path = kept(tmp_path, store)
    data = json.loads(path.read_text())
    for broken in ({**data, "version": 99}, {**data, "sessions": [{"id": 1}]}, [1, 2]):
        path.write_text(json.dumps(broken))
        assert load(store.path) is None
    path.write_text("{ not json")
    assert load(store.path) is None


def test_without_an_open_chat_only_the_list_is_kept(tmp_path: Path) -> None:
    store = seeded(tmp_path)
    kept(tmp_path, store, session_id=None)
    frame = load(store.path)
    assert frame is not None and frame.view is None
    assert sorted(s.id for s in frame.sessions) == ["chat", "other"]


def test_the_store_is_named_as_the_store_names_itself() -> None:
    assert first_frame.STORE_FILENAME == STORE_FILENAME


def test_reading_the_frame_loads_no_database() -> None:
    code = ("import sys; from pathlib import Path; "
            "from treechat.services.store_life.first_frame import load, store_path_in; "
            "load(store_path_in(Path('.'))); print('duckdb' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"
