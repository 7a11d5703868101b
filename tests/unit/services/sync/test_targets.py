"""A folder and a real WebDAV server (wsgidav on 127.0.0.1) keep segments the same way: whole
files or none, listings without half-written ones; a refused login or a server that is not
there is one line."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.clock import FakeClock
from tests.support.sync_devices import graph_of, make_device, shared_state, start_target
from tests.support.webdav_server import PASSWORD, USER, WebDavServer

from treechat.services.sync.service import TargetConfig
from treechat.services.sync.targets import (
    PARTIAL,
    FolderTarget,
    StoredFile,
    SyncTarget,
    TargetError,
    WebDavTarget,
)


@pytest.fixture
def dav(tmp_path: Path) -> Iterator[WebDavServer]:
    server = WebDavServer(tmp_path / "dav")
    yield server
    server.stop()


@pytest.fixture(params=["folder", "webdav"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[SyncTarget]:
    if request.param == "folder":
        (tmp_path / "folder").mkdir()
        yield FolderTarget(tmp_path / "folder")
        return
    server = WebDavServer(tmp_path / "dav")
    client = WebDavTarget(server.url, USER, PASSWORD)
    try:
        yield client
    finally:
        client.close()
        server.stop()


def test_files_are_written_whole_and_listed_without_parts(target: SyncTarget) -> None:
    assert target.read("segments/a/one.tcs") is None
    assert target.list("segments") == []
    target.write("segments/a/one.tcs", b"first")
    target.write("segments/a/one.tcs", b"second")  # the same name again replaces it
    target.write("segments/b/two.tcs", b"x" * 1000)
    target.write(f"segments/b/three.tcs{PARTIAL}abcd", b"half")  # someone's unfinished file
    assert target.read("segments/a/one.tcs") == b"second"
    assert target.list("segments") == [StoredFile("segments/a/one.tcs", 6),
                                       StoredFile("segments/b/two.tcs", 1000)]


def test_a_refused_login_and_a_missing_server_are_one_line(dav: WebDavServer) -> None:
    wrong = WebDavTarget(dav.url, USER, "wrong")
    with pytest.raises(TargetError) as refused:
        wrong.read("treechat-sync.json")
    wrong.close()
    assert str(refused.value) == f"{dav.url}: read treechat-sync.json refused (401)"
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    nowhere = WebDavTarget(f"http://127.0.0.1:{port}/dav", timeout=5)
    with pytest.raises(TargetError) as missing:
        nowhere.list("segments")
    nowhere.close()
    assert "\n" not in str(missing.value) and "cannot list" in str(missing.value)


@pytest.mark.asyncio
async def test_two_computers_sync_through_webdav(dav: WebDavServer, tmp_path: Path) -> None:
    first = WebDavTarget(dav.url, USER, PASSWORD)
    start_target(first)
    first.close()
    clock = FakeClock()
    devices = [make_device(tmp_path, name, WebDavTarget(dav.url, USER, PASSWORD), clock)
               for name in ("laptop", "desktop")]
    try:
        for d in devices:
            await d.sync.add(TargetConfig("webdav", dav.url, USER), "correct horse battery "
                             "staple", PASSWORD)
        a, b = devices
        chat = await a.sessions.create(title="Over WebDAV")
        await a.sessions.append_message(chat.id, "carried by a server")
        clock.advance(1)
        other = await b.sessions.create(title="From the desktop")
        await b.sessions.append_message(other.id, "and back")
        for d in (a, b, a):
            clock.advance(1)
            await d.sync.sync_now()
        assert graph_of(a.store) == graph_of(b.store)
        assert graph_of(a.store)["rows"] == 2
        assert shared_state(a.store) == shared_state(b.store)
        for path in (tmp_path / "dav").rglob("*"):
            if path.is_file():
                assert b"carried by a server" not in path.read_bytes()
    finally:
        for d in devices:
            d.close()


def test_a_server_that_answers_without_end_or_compressed_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import gzip

    import httpx
    from tests.support.raw_http import RawServer

    from treechat.core.bounded_read import Bounds, ReadLimitError
    from treechat.services.sync import targets

    monkeypatch.setattr(targets, "FILE_BOUNDS", Bounds(cap=1024 * 1024, deadline=30.0))
    server = RawServer()
    server.route("/dav/endless.tcs", b"x" * 65_536, endless=True)
    server.route("/dav/packed.tcs", gzip.compress(b"\0" * 10_000_000),
                 headers=(("content-encoding", "gzip"),))
    # the transport a WebDAV target reads through
    client = httpx.Client(transport=targets.bounded_transport(httpx.HTTPTransport()))
    try:
        with pytest.raises(ReadLimitError, match="larger than 1 MB"):
            client.get(f"{server.url}/dav/endless.tcs")
        assert server.sent["/dav/endless.tcs"] < 64 * 1024 * 1024  # let go, not read on
        with pytest.raises(ReadLimitError, match=r"came compressed \(gzip\)"):
            client.get(f"{server.url}/dav/packed.tcs")
    finally:
        client.close()
        server.stop()
