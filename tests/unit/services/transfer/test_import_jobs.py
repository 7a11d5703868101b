"""An import as the window runs it: progress while the file is written, the titles of what
it added as the chat list shows them, and a cancel honoured between conversations."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio
from tests.support.clock import FakeClock

from treechat.services.transfer.import_jobs import ImportJobs
from treechat.services.transfer.importing import ImportProgress
from treechat.store.database import Store

CHATGPT = Path(__file__).resolve().parents[3] / "data" / "imports" / "chatgpt-export-browsing.json"


@pytest_asyncio.fixture
async def store(tmp_path: Path) -> AsyncIterator[Store]:
    store = Store.open(tmp_path / "t.duckdb")
    yield store
    store.close()


@pytest.mark.asyncio
async def test_an_import_reports_progress_and_names_what_it_added(store: Store) -> None:
    jobs = ImportJobs(store, FakeClock())
    seen: list[ImportProgress] = []
    summary = await jobs.run(CHATGPT, progress=seen.append, cancel=asyncio.Event())
    assert (summary.sessions, summary.cancelled) == (2, False)
    assert [p.done for p in seen if p.stage == "writing"][-1] == 2
    titles = await jobs.titles((*summary.session_ids, "no-such-chat"))
    assert set(titles) == set(summary.session_ids) and all(titles.values())


@pytest.mark.asyncio
async def test_a_cancelled_import_writes_no_conversation(store: Store) -> None:
    cancel = asyncio.Event()
    cancel.set()
    summary = await ImportJobs(store, FakeClock()).run(CHATGPT, progress=lambda _p: None,
                                                       cancel=cancel)
    assert summary.cancelled and summary.sessions == 0
    assert await store.run(lambda r: r.list_sessions()) == ()
