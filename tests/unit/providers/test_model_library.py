"""The model library over real HTTP: a loopback server speaking the hub's routes serves the
bundled SmolLM2 GGUF under another repository's name."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.hub_server import Hub, HubServer, sha256_of

from treechat.providers.local.bundled_model import find_gguf
from treechat.providers.model_library import (
    ChecksumMismatch,
    DownloadControl,
    DownloadStopped,
    LibraryError,
    ModelLibrary,
    NotEnoughSpace,
    Progress,
    TooMuchData,
    recommended,
)

REPO = "acme/Tiny-Chat-GGUF"
FILE = "tiny-chat-q4.gguf"


@pytest.fixture(scope="module")
def gguf() -> Path:
    return find_gguf()


@pytest.fixture(scope="module")
def digest(gguf: Path) -> str:
    return sha256_of(gguf)


@pytest.fixture
def hub(gguf: Path, digest: str) -> Iterator[HubServer]:
    state = Hub()
    state.add(REPO, FILE, gguf, digest)
    with HubServer(state) as server:
        yield server


def library(tmp_path: Path, hub: HubServer, **kwargs: object) -> ModelLibrary:
    return ModelLibrary(tmp_path / "models", endpoint=hub.url, **kwargs)  # type: ignore[arg-type]


def test_search_lists_matching_gguf_repositories(tmp_path: Path, hub: HubServer) -> None:
    found = library(tmp_path, hub).search("tiny")
    assert [r.repo for r in found] == [REPO]
    assert found[0].license == "apache-2.0"
    assert library(tmp_path, hub).search("nothing-like-it") == []
    assert library(tmp_path, hub).search("   ") == []


def test_files_carry_the_hubs_size_and_sha256(tmp_path: Path, hub: HubServer, gguf: Path,
                                              digest: str) -> None:
    (entry,) = library(tmp_path, hub).files(REPO)  # README.md is not a model
    assert (entry.file, entry.size, entry.sha256) == (FILE, gguf.stat().st_size, digest)


def test_download_checks_the_sha256_and_lists_the_model(tmp_path: Path, hub: HubServer,
                                                        digest: str) -> None:
    lib = library(tmp_path, hub)
    reports: list[Progress] = []
    model = lib.download(REPO, FILE, on_progress=reports.append)
    assert model.sha256 == digest
    assert hashlib.sha256(Path(model.path).read_bytes()).hexdigest() == digest
    assert model.context_length == 8192  # from the GGUF header
    assert reports[-1].done == reports[-1].total == model.size
    assert lib.installed() == [model]
    assert lib.find(model.name) == model
    assert lib.partial() == []


def test_a_paused_download_resumes_from_its_bytes(tmp_path: Path, hub: HubServer,
                                                  digest: str) -> None:
    lib = library(tmp_path, hub)
    control = DownloadControl()

    def pause_at_a_third(progress: Progress) -> None:
        if progress.done > progress.total // 3:
            control.pause()

    with pytest.raises(DownloadStopped) as stopped:
        lib.download(REPO, FILE, on_progress=pause_at_a_third, control=control)
    assert not stopped.value.cancelled
    (partial,) = lib.partial()
    assert 0 < partial.done < partial.size
    model = lib.download(REPO, FILE)
    assert model.sha256 == digest
    ranges = [r for method, path, r in hub.hub.requests if "/resolve/" in path]
    assert ranges == [None, f"bytes={partial.done}-"]  # the second GET asked only for the rest


def test_cancel_removes_the_partial_file(tmp_path: Path, hub: HubServer) -> None:
    lib = library(tmp_path, hub)
    control = DownloadControl()

    def cancel_soon(progress: Progress) -> None:
        if progress.done > 0:
            control.cancel()

    with pytest.raises(DownloadStopped) as stopped:
        lib.download(REPO, FILE, on_progress=cancel_soon, control=control)
    assert stopped.value.cancelled
    assert lib.partial() == []
    assert not list((tmp_path / "models").rglob("*.part"))


def test_bytes_that_do_not_match_are_refused_and_removed(tmp_path: Path, hub: HubServer) -> None:
    hub.hub.tamper = True
    lib = library(tmp_path, hub)
    with pytest.raises(ChecksumMismatch, match="does not match the hub's checksum"):
        lib.download(REPO, FILE)
    assert lib.installed() == []
    assert not [p for p in (tmp_path / "models").rglob("*") if p.is_file()]


def test_a_mirror_that_sends_more_than_declared_is_stopped_at_the_declared_size(
    tmp_path: Path, hub: HubServer, gguf: Path
) -> None:
    hub.hub.endless = True
    lib = library(tmp_path, hub)
    with pytest.raises(TooMuchData, match=r"than the .* the hub declared; the download was "
                                          r"stopped and the partial file removed"):
        lib.download(REPO, FILE)
    assert lib.installed() == [] and lib.partial() == []
    assert not [p for p in (tmp_path / "models").rglob("*") if p.is_file()]


def test_not_enough_disk_space_is_refused_before_any_byte(tmp_path: Path, hub: HubServer) -> None:
    lib = library(tmp_path, hub, free_space=lambda _path: 50_000_000)
    with pytest.raises(NotEnoughSpace, match="only 50 MB is free"):
        lib.download(REPO, FILE)
    assert not [r for r in hub.hub.requests if "/resolve/" in r[1]]


def test_remove_frees_the_disk_space(tmp_path: Path, hub: HubServer) -> None:
    lib = library(tmp_path, hub)
    model = lib.download(REPO, FILE)
    assert lib.remove(model.name) == model.size
    assert lib.installed() == []
    assert not Path(model.path).exists()
    with pytest.raises(LibraryError, match="no downloaded model"):
        lib.remove(model.name)


def test_file_names_from_the_hub_are_never_paths(tmp_path: Path, hub: HubServer,
                                                 gguf: Path) -> None:
    lib = library(tmp_path, hub)
    with pytest.raises(LibraryError, match="not a GGUF file name"):
        lib.download(REPO, "../../etc/passwd")
    hub.hub.add("odd/Repo_v2.GGUF", "Q4_K_M/nested model.gguf", gguf)
    model = lib.download("odd/Repo_v2.GGUF", "Q4_K_M/nested model.gguf")
    assert Path(model.path) == tmp_path / "models" / "odd--Repo_v2.GGUF" / "nested-model.gguf"


def test_a_file_added_from_disk_runs_in_place(tmp_path: Path, gguf: Path) -> None:
    lib = ModelLibrary(tmp_path / "models", endpoint="http://127.0.0.1:9")
    model = lib.add_file(gguf)
    assert model.path == str(gguf.resolve())
    assert lib.installed() == [model]
    lib.remove(model.name)
    assert gguf.exists()  # only forgotten, never deleted


def test_an_unreachable_hub_is_a_clear_error(tmp_path: Path) -> None:
    lib = ModelLibrary(tmp_path / "models", endpoint="http://127.0.0.1:9")
    with pytest.raises(LibraryError, match="could not search the hub"):
        lib.search("qwen")


def test_the_recommended_models_are_permissive_gguf_files() -> None:
    models = recommended()
    assert len(models) >= 3
    assert {m.license for m in models} <= {"Apache-2.0", "MIT"}
    assert all(m.file.endswith(".gguf") and m.ram_gb > 0 for m in models)


@pytest.mark.parametrize("path", ["/api/models", "/api/models/someone/model-GGUF"])
def test_a_hub_answering_an_error_without_end_is_one_line_and_read_no_further(
        tmp_path: Path, path: str) -> None:
    from tests.support.raw_http import RawServer

    server = RawServer()
    server.route(path, b'{"error": "' + b"E" * 65_536, status=500, endless=True)
    library = ModelLibrary(tmp_path / "models", endpoint=server.url)
    try:
        with pytest.raises(LibraryError, match="larger than 256 KB, the most that is read"):
            if path == "/api/models":
                library.search("qwen")
            else:
                library.files("someone/model-GGUF")
        # let go at the cap: a few socket buffers, not the gigabytes read before
        assert server.sent[path] < 32 * 1024 * 1024
    finally:
        server.stop()
