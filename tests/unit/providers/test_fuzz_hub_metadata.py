"""Any answer from a model hub about a repository, however broken (a field of the wrong
kind, no sha256, nested thousands deep, cut short, not JSON), gives the repository's files or
one line (`LibraryError`), never a traceback or a raw `KeyError`, within a memory bound; over
real HTTP from a loopback server standing in for the hub."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from tests.support.fuzz_values import damaged_json_bytes
from tests.support.peak_memory import peak_rss_mb
from tests.support.raw_http import RawServer

from treechat.providers.model_library import LibraryError, ModelLibrary

pytestmark = pytest.mark.slow
MEMORY_BOUND_MB = 150
INFO = {
    "id": "acme/Tiny-GGUF", "modelId": "acme/Tiny-GGUF", "sha": "0" * 40, "private": False,
    "tags": ["gguf"], "downloads": 3, "likes": 1,
    "siblings": [{"rfilename": "tiny-q4.gguf", "size": 10, "blobId": "1" * 40,
                  "lfs": {"sha256": "a" * 64, "size": 10, "pointerSize": 134}}],
}


@pytest.fixture(scope="module")
def raw() -> Iterator[RawServer]:
    with RawServer() as server:
        before = peak_rss_mb()
        yield server
        assert peak_rss_mb() - before <= MEMORY_BOUND_MB


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
@given(body=damaged_json_bytes(INFO))
def test_repository_metadata_of_any_shape_gives_files_or_one_line(
    raw: RawServer, tmp_path_factory: pytest.TempPathFactory, body: bytes
) -> None:
    raw.answer(body)
    library = ModelLibrary(Path(tmp_path_factory.mktemp("models")), endpoint=raw.url)
    try:
        files = library.files("acme/Tiny-GGUF")
    except LibraryError as exc:
        message = str(exc)
        assert message and "\n" not in message
        assert not message.endswith("'sha256'")  # a bare KeyError is not an explanation
        return
    assert all(f.file.endswith(".gguf") for f in files)
