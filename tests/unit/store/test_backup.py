"""Backups are whole DuckDB files written by DuckDB, made before each migration and daily, kept
by a small retention, and restored only while nothing holds the store."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import duckdb
import pytest

from treechat.core.dag import Change
from treechat.core.model import Node, Session
from treechat.store import backup as backups
from treechat.store.database import Store
from treechat.store.repository import Repository
from treechat.store.schema import MIGRATIONS, SCHEMA_VERSION

DAY = 86400.0


def session(sid: str, title: str) -> Session:
    return Session(sid, title, None, "m", 1.0, updated_at=1.0)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "treechat.duckdb")
    s.call(lambda r: r.create_session(session("s1", "Before the backup")))
    yield s
    s.close()


def test_a_backup_opens_as_a_store_with_the_same_content(store: Store) -> None:
    made = store.backup("manual")
    assert made.path.parent == backups.backups_dir(store.path)
    assert backups.verify_backup(made.path).ok
    copy = Store.open(made.path)
    try:
        assert [s.title for s in copy.call(lambda r: r.list_sessions())] == ["Before the backup"]
        assert copy.call(lambda r: r.schema_version()) == SCHEMA_VERSION
    finally:
        copy.close()


def test_a_backup_is_a_snapshot_of_committed_work(store: Store) -> None:
    """Writes that go on while the copy runs land in the store, never half in the backup."""
    nodes = [
        Node(id=f"n{i}", seq=0, created_at=1.0, session_id="s1", role="user",
             output="x" * 2000, predecessor=f"n{i - 1}" if i else None)
        for i in range(3000)
    ]
    store.call(lambda r: r.apply_change("s1", Change(tuple(nodes), "n2999"), 2.0))
    stop = threading.Event()
    written: list[int] = []

    def writer() -> None:
        i = 0
        while not stop.is_set():
            batch = [session(f"w{i}-{j}", "during") for j in range(5)]

            def five(r: Repository, b: list[Session] = batch) -> None:
                with r.transaction():
                    for s in b:
                        r.create_session(s)

            store.call(five)
            written.append(i)
            i += 1

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        made = store.backup("manual")
    finally:
        stop.set()
        thread.join()
    con = duckdb.connect(str(made.path), read_only=True)
    try:
        query = "SELECT count(*) FROM sessions WHERE title = 'during'"
        (during,) = con.execute(query).fetchall()[0]
        assert con.execute("SELECT count(*) FROM nodes").fetchall() == [(3000,)]
    finally:
        con.close()
    assert written and during % 5 == 0  # whole transactions only


def test_a_migration_is_preceded_by_a_backup(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE schema_version (version INTEGER NOT NULL, applied_at DOUBLE)")
    for statement in MIGRATIONS[0].statements:
        con.execute(statement)
    con.execute("INSERT INTO schema_version VALUES (1, 0)")
    con.execute("INSERT INTO sessions VALUES ('s1', 'Old', NULL, '', 1, 1, NULL, FALSE)")
    con.close()
    if SCHEMA_VERSION == 1:
        pytest.skip("no migration after the first yet")  # pragma: no cover

    Store.open(path).close()
    (made,) = backups.list_backups(path)
    assert made.reason == f"before-migration-1-to-{SCHEMA_VERSION}"
    old = duckdb.connect(str(made.path), read_only=True)
    try:
        assert old.execute("SELECT max(version) FROM schema_version").fetchone() == (1,)
        assert old.execute("SELECT title FROM sessions").fetchall() == [("Old",)]
    finally:
        old.close()


def test_retention_keeps_the_last_three_and_one_a_week_for_a_month(tmp_path: Path) -> None:
    store_path = tmp_path / "treechat.duckdb"
    folder = backups.backups_dir(store_path)
    folder.mkdir()
    now = datetime(2026, 6, 30, 12, 0).timestamp()
    # one a day for 60 days, the newest an hour old
    for age in range(60):
        when = now - 3600 - age * DAY
        stamp = datetime.fromtimestamp(when).strftime("%Y%m%dT%H%M%S")
        (folder / f"treechat-{stamp}-daily.duckdb").write_bytes(b"x")
    backups.prune_backups(store_path, now=now)
    ages = sorted(round((now - b.created_at) / DAY) for b in backups.list_backups(store_path))
    # the 3 newest (ages 0,1,2), then the newest of each 7-day span within 31 days
    assert ages == [0, 1, 2, 7, 14, 21, 28]


def test_needs_backup_is_daily(tmp_path: Path, store: Store) -> None:
    assert backups.needs_backup(store.path)
    made = store.backup_if_due()
    assert made is not None
    assert store.backup_if_due() is None
    assert backups.needs_backup(store.path, now=made.created_at + DAY + 1)


def test_restore_is_refused_while_this_process_has_the_store_open(store: Store) -> None:
    made = store.backup("manual")
    with pytest.raises(backups.BackupError, match="open in this process"):
        backups.restore_backup(made.path, store.path)


HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from treechat.store.database import Store
    s = Store.open(Path(sys.argv[1]))
    print("open", flush=True)
    time.sleep(60)
""")


def test_restore_is_refused_while_another_process_holds_the_store(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    with Store.open(path) as s:
        made = s.backup("manual")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        with pytest.raises(backups.BackupError, match="in use"):
            backups.restore_backup(made.path, path)
    finally:
        holder.kill()
        holder.wait(timeout=30)
        assert holder.stdout is not None
        holder.stdout.close()
    assert not list(tmp_path.glob("*.before-restore-*"))


def test_restore_puts_the_backup_back_and_keeps_what_it_replaced(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    with Store.open(path) as s:
        s.call(lambda r: r.create_session(session("s1", "Kept in the backup")))
        made = s.backup("manual")
        s.call(lambda r: r.create_session(session("s2", "Written after it")))
    aside = backups.restore_backup(made.path, path)
    assert aside is not None and aside.exists()
    with Store.open(path) as s:
        assert [x.title for x in s.call(lambda r: r.list_sessions())] == ["Kept in the backup"]
    with Store.open(aside) as s:
        assert len(s.call(lambda r: r.list_sessions())) == 2


def test_a_damaged_backup_is_not_restored(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    with Store.open(path) as s:
        s.call(lambda r: r.create_session(session("s1", "Current")))
        made = s.backup("manual")
    data = made.path.read_bytes()
    made.path.write_bytes(data[: len(data) // 2])
    with pytest.raises(backups.BackupError, match="cannot be restored"):
        backups.restore_backup(made.path, path)
    with Store.open(path) as s:
        assert [x.title for x in s.call(lambda r: r.list_sessions())] == ["Current"]


def test_find_backup_by_prefix_and_latest(tmp_path: Path, store: Store) -> None:
    first = store.backup("manual")
    second = store.backup("manual")
    assert backups.find_backup(store.path, "latest").path == second.path
    assert backups.find_backup(store.path, first.name).path == first.path
    assert first.path != second.path
    with pytest.raises(backups.BackupError, match="matches 2 backups"):
        backups.find_backup(store.path, "treechat-")


def test_an_empty_name_is_refused_not_taken_for_the_only_backup(store: Store) -> None:
    store.backup("manual")
    for name in ("", "  "):
        with pytest.raises(backups.BackupError, match="give the name of a backup"):
            backups.find_backup(store.path, name)


def large_store(path: Path, messages: int = 1000, size: int = 20000) -> Store:
    """A store whose backup takes long enough to be caught half-way (incompressible text)."""
    s = Store.open(path)
    s.call(lambda r: r.create_session(session("s1", "Long")))
    nodes = [
        Node(id=f"n{i}", seq=0, created_at=1.0, session_id="s1", role="user",
             output=os.urandom(size // 2).hex(), predecessor=f"n{i - 1}" if i else None)
        for i in range(messages)
    ]
    s.call(lambda r: r.apply_change("s1", Change(tuple(nodes), nodes[-1].id), 2.0))
    return s


def test_closing_the_store_stops_a_backup_being_written(tmp_path: Path) -> None:
    """Quitting while the daily backup copies: the store closes (no "connection is busy"),
    the half-written file is removed, and nothing of the store is lost."""
    path = tmp_path / "treechat.duckdb"
    s = large_store(path)
    folder = backups.backups_dir(path)
    outcome: list[BaseException | backups.Backup] = []

    def back_up() -> None:
        try:
            outcome.append(s.backup("daily"))
        except backups.BackupError as exc:
            outcome.append(exc)

    thread = threading.Thread(target=back_up)
    thread.start()
    while not any(folder.glob(".*.partial")):  # the copy has begun
        assert thread.is_alive(), outcome
        time.sleep(0.001)
    s.close()
    thread.join()
    assert len(outcome) == 1 and isinstance(outcome[0], backups.BackupStopped)
    assert list(folder.iterdir()) == []
    again = Store.open(path)
    try:
        assert len(again.call(lambda r: r.session_nodes("s1"))) == 1000
        made = again.backup_if_due()  # the next start makes the one that was stopped
        assert made is not None and backups.verify_backup(made.path).ok
    finally:
        again.close()


def test_a_backup_stopped_before_it_begins_leaves_nothing(tmp_path: Path) -> None:
    path = tmp_path / "treechat.duckdb"
    Store.open(path).close()
    con = duckdb.connect(str(path))
    stop = backups.BackupStop()
    stopper = threading.Thread(target=stop.stop)  # returns once the backup has ended
    stopper.start()
    while not stop.requested:
        time.sleep(0.001)
    try:
        with pytest.raises(backups.BackupStopped):
            backups.create_backup(con, path, stop=stop)
        assert list(backups.backups_dir(path).iterdir()) == []
        assert backups.create_backup(con, path).path.exists()  # the next one is made
    finally:
        stop.finished.set()
        stopper.join()
        con.close()
