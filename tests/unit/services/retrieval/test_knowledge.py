"""Knowledge bases over real files (Markdown, HTML, code, a PDF PDFium writes) beside a real
store, with the real offline embedder: found in other words, cited by file, page and line,
kept current incrementally, removed cleanly, bad input refused in one line."""

from __future__ import annotations

import asyncio
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.support.attachment_files import pdf as pdf_file

from treechat.services.retrieval.knowledge import (
    READ_BATCH,
    KnowledgeError,
    KnowledgeService,
    full_path,
    shown_path,
)
from treechat.store.database import Store
from treechat.store.knowledge import knowledge_path


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store.open(tmp_path / "data" / "chats.duckdb")
    yield s
    s.close()


def notes(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "garden.md").write_text(
        "# Garden\n\nThe tomatoes need water twice a week in July.\n\n"
        "The shed key hangs on a hook behind the pantry door.\n")
    (root / "sub" / "trip.html").write_text(
        "<html><body><h1>Travel</h1><p>Our flight to Reykjavik leaves at dawn.</p>"
        "<script>var secret = 'not text';</script></body></html>")
    (root / "sub" / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / ".hidden").mkdir()
    (root / ".hidden" / "x.md").write_text("never indexed")
    return root


def test_add_search_cite_and_follow_changes(store: Store, tmp_path: Path) -> None:
    root = notes(tmp_path / "notes")
    service = KnowledgeService(store)
    seen: list[int] = []

    async def run() -> None:
        await service.add("home", [str(root)])
        report = await service.reindex("home", lambda p: seen.append(p.done))
        assert report.files == 3 and report.read == 3 and not report.skipped
        assert seen == [3]  # one report per batch of files read
        (hit, *_) = await service.search(["home"], "where can I find what unlocks the hut?")
        assert hit.path == str(root / "garden.md") and "pantry door" in hit.text
        assert hit.citation == f"{root / 'garden.md'}, line 5"
        (trip, *_) = await service.search(["home"], "when does the plane to Iceland depart")
        assert trip.path.endswith("trip.html") and "secret" not in trip.text
        again = await service.reindex("home")
        assert again.read == 0  # nothing changed: nothing read
        (root / "garden.md").write_text("The shed key is now under the doormat.\n")
        (root / "sub" / "calc.py").unlink()
        changed = await service.reindex("home")
        assert changed.read == 1 and changed.removed == 1 and changed.files == 2
        (hit, *_) = await service.search(["home"], "shed key")
        assert "doormat" in hit.text
        assert await service.stats() == {"home": (2, 2)}
        await service.remove("home")
        assert await service.bases() == {} and await service.stats() == {}

    asyncio.run(run())
    path = knowledge_path(store.path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_pdf_pages_are_cited(store: Store, tmp_path: Path) -> None:
    pdf = tmp_path / "doc.pdf"
    pdf.write_bytes(pdf_file(["The first page is about invoices.",
                              "The violin was repaired by a luthier in Cremona."]))
    service = KnowledgeService(store)

    async def run() -> None:
        await service.add("docs", [str(pdf)])
        await service.reindex("docs")
        (hit, *_) = await service.search(["docs"], "who fixed the string instrument?")
        assert hit.page == 2 and "Cremona" in hit.text
        assert hit.citation.endswith("doc.pdf, page 2, line 1")

    asyncio.run(run())


def test_bad_names_and_paths_are_refused(store: Store, tmp_path: Path) -> None:
    service = KnowledgeService(store)

    async def run() -> None:
        with pytest.raises(KnowledgeError, match="no such file or folder"):
            await service.add("x", [str(tmp_path / "missing")])
        with pytest.raises(KnowledgeError, match="needs a name"):
            await service.add("  ", [str(tmp_path)])
        with pytest.raises(KnowledgeError, match="no knowledge base named"):
            await service.search(["nope"], "anything")
        with pytest.raises(KnowledgeError, match="no knowledge base named"):
            await service.remove("nope")
        assert await service.bases() == {}

    asyncio.run(run())


BASES_CHILD = """
import asyncio, json, sys
from treechat.services.retrieval.knowledge import KnowledgeService
from treechat.store.database import Store
store = Store.open(sys.argv[1])
try:
    service = KnowledgeService(store)
    names = asyncio.run(service.bases()), asyncio.run(service.for_session("s1"))
finally:
    store.close()
print(json.dumps({"names": names, "numpy": "numpy" in sys.modules}))
"""


def test_which_bases_a_chat_uses_is_read_without_the_vector_libraries(tmp_path: Path) -> None:
    """Every send asks; numpy (20 MB) comes only with the vectors a search reads."""
    import json
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", BASES_CHILD, str(tmp_path / "c.duckdb")],
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report == {"names": [{}, []], "numpy": False}


def test_a_folder_of_many_files_is_read_in_batches_and_a_bad_file_is_named(
        store: Store, tmp_path: Path) -> None:
    root = tmp_path / "many"
    root.mkdir()
    for n in range(19):
        (root / f"n{n:02d}.md").write_text(f"# Note {n}\n\nNothing of note happened on day {n}.\n")
    (root / "n17.md").write_text("# Note 17\n\nThe spare car key is taped under the mailbox.\n")
    (root / "n09.txt").write_bytes(b"\x00binary\x00" * 20)
    service = KnowledgeService(store)
    seen: list[int] = []

    async def run() -> None:
        await service.add("many", [str(root)])
        report = await service.reindex("many", lambda p: seen.append(p.done))
        assert report.files == 19 and report.read == 19
        assert report.skipped == (f"{root / 'n09.txt'}: n09.txt is not a text file",)
        # one report per batch, not per file: a window redraws its progress that often
        assert seen == [*range(READ_BATCH, 20, READ_BATCH), 20]
        (hit, *_) = await service.search(["many"], "where is the spare key for the vehicle?")
        assert hit.path == str(root / "n17.md") and "mailbox" in hit.text
        assert await service.stats() == {"many": (19, 19)}

    asyncio.run(run())


def test_the_model_is_shown_a_file_from_the_folder_added_and_it_leads_back(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home" / "ada"
    (home / "notes" / "garden").mkdir(parents=True)
    (home / "notes" / "garden" / "roses.md").write_text("prune in March\n")
    (home / "lease.pdf").write_bytes(b"%PDF-1.4\n")
    roots = [str(home / "notes"), str(home / "notes" / "garden"), str(home / "lease.pdf")]
    rose = str(home / "notes" / "garden" / "roses.md")
    assert shown_path(rose, roots) == "garden/roses.md"  # the innermost folder added
    assert shown_path(str(home / "lease.pdf"), roots) == "lease.pdf"  # a file added alone
    assert shown_path(rose, roots[:1]) == "notes/garden/roses.md"
    assert full_path("garden/roses.md", roots) == rose
    assert full_path("notes/garden/roses.md", roots[:1]) == rose
    assert full_path("lease.pdf", roots) == str(home / "lease.pdf")
    assert full_path("notes/../lease.pdf", roots[:1]) is None  # never outside what was added
    assert full_path("garden/tulips.md", roots) is None


def test_a_pipe_or_a_link_to_a_device_in_a_folder_is_named_and_passed_over(
        store: Store, tmp_path: Path) -> None:
    root = tmp_path / "odd"
    root.mkdir()
    (root / "kept.md").write_text("The boat is moored at the second jetty.\n")
    os.mkfifo(root / "pipe.md")  # reading it would wait for a writer that never comes
    (root / "zero.md").symlink_to("/dev/zero")  # and this would never end
    service = KnowledgeService(store, offload=False)

    async def run() -> None:
        await service.add("odd", [str(root)])
        report = await service.reindex("odd")
        assert report.read == 1
        assert sorted(report.skipped) == [
            f"{root / 'pipe.md'}: pipe.md is a pipe, a device or a socket, not a file",
            f"{root / 'zero.md'}: zero.md is a pipe, a device or a socket, not a file",
        ]
        (hit, *_) = await service.search(["odd"], "where is the vessel tied up?")
        assert "second jetty" in hit.text

    asyncio.run(run())
