"""Reading an export file: caps on one conversation and on what a zip unpacks to, held while
it is read (a zip bomb is refused with bounded memory), and the whole-file reading of every
format in one call."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from treechat.core.imports import ImportFileError
from treechat.services.transfer.export_reading import read_export, read_export_parts

DATA = Path(__file__).resolve().parents[3] / "data" / "imports"


def test_a_whole_file_reads_as_one_export_of_its_format() -> None:
    parsed = read_export(DATA / "chatgpt-export-browsing.json")
    assert parsed.source_format == "chatgpt"
    assert len(parsed.conversations) == 2 and parsed.skipped == ()


def test_a_file_that_is_not_an_export_is_refused_in_words(tmp_path: Path) -> None:
    path = tmp_path / "notes.json"
    path.write_text('{"hello": "world"}', encoding="utf-8")
    with pytest.raises(ImportFileError, match="does not recognise"):
        read_export(path)


def test_a_conversation_over_the_cap_is_refused_while_it_is_read(tmp_path: Path) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"title": "x", "mapping": {}, "create_time": 1,
                                 "pad": "y" * 200_000}]), encoding="utf-8")
    with pytest.raises(ImportFileError, match="larger than"):
        list(read_export_parts(path, whole_file_bytes=1024,
                               max_conversation_bytes=64 * 1024))


def test_a_zip_that_unpacks_past_the_cap_is_refused(tmp_path: Path) -> None:
    archive = tmp_path / "bomb.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("conversations.json", b"[" + b" " * (4 * 1024 * 1024) + b"]")
    with pytest.raises(ImportFileError, match="unpacks to more than"):
        list(read_export_parts(archive, max_bytes=1024 * 1024))


BOMB_CHILD = r"""
import sys
from pathlib import Path
from treechat.core.imports import ImportFileError
from treechat.services.transfer.export_reading import read_export_parts
path = Path(sys.argv[1])
def peak():  # the kernel's high-water mark for this process (ru_maxrss survives exec)
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"): return int(line.split()[1]) // 1024
before = peak()
try:
    list(read_export_parts(path))
    print("imported")
except ImportFileError as exc:
    print("refused:", exc)
print(peak() - before)
"""


def write_bomb(path: Path, body: bytes, repeat: int, tail: bytes) -> None:
    """A zip whose one member unpacks to `body` then `repeat` MiB of spaces then `tail`,
    written through the zip's own stream so the test never holds it in memory."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as zf, zf.open(
        "conversations.json", "w", force_zip64=True
    ) as member:
        member.write(body)
        block = b" " * (1024 * 1024)
        for _ in range(repeat):
            member.write(block)
        member.write(tail)


@pytest.mark.parametrize(
    ("body", "tail", "words"),
    [
        (b"[", b"]", "larger than"),  # whitespace forever inside the list
        (b'[{"mapping": {}, "title": "', b'"}]', "larger than"),  # one endless string
        (b"\x00", b"", "too large to read as one conversation"),  # not even JSON
    ],
)
def test_a_zip_bomb_gets_its_clear_error_with_bounded_memory(
    tmp_path: Path, body: bytes, tail: bytes, words: str
) -> None:
    archive = tmp_path / "bomb.zip"
    write_bomb(archive, body, 400, tail)  # 400 MiB unpacked, ~2 MB packed
    assert archive.stat().st_size < 4 * 1024 * 1024
    out = subprocess.run([sys.executable, "-c", BOMB_CHILD, str(archive)], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    assert out[0].startswith("refused:") and words in out[0]
    # MB the read added: bounded by the 128 MB cap on one conversation, where reading the
    # member whole would hold 400 (and twice that decoded)
    assert int(out[1]) < 250


def _claude_with_a_number_of(digits: int) -> str:
    return ('[{"uuid": "c1", "name": "x", "chat_messages": [{"uuid": "m1", "text": "x", '
            '"sender": "human", "created_at": ' + "9" * digits + "}]}]")


@pytest.mark.parametrize(("whole_file_bytes", "words"), [
    (64 * 1024**2, "holds a number of more than 4,300 digits"),
    (16, "holds a number of more than 4,300 digits|integer overflow"),  # as the parser says
], ids=["whole", "streamed"])
def test_a_number_python_will_not_make_is_a_clear_refusal_read_whole_or_streamed(
    tmp_path: Path, whole_file_bytes: int, words: str
) -> None:
    path = tmp_path / "conversations.json"
    path.write_text(_claude_with_a_number_of(5000), encoding="utf-8")
    with pytest.raises(ImportFileError, match=words):
        list(read_export_parts(path, whole_file_bytes=whole_file_bytes))
