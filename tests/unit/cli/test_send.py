"""`treechat send` as a user runs it: the message is committed and acknowledged before the
slow part starts, long text comes from a file or standard input, and a message that cannot
be sent (empty, not text, unreadable) sends nothing, in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from tests.support.cli_runner import one_line_error, send_command, send_env, stored_path, treechat
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.model import Session
from treechat.store.database import Store, default_store_path


def test_the_message_is_on_disk_when_the_acknowledgment_is_printed(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """Killed the moment `[sent: …]` appears, before any reply: the message is there."""
    loopback.queue(Reply(text="never seen", tokens_per_second=5))
    child = subprocess.Popen(
        send_command(tmp_path, loopback.openai_base, "--new", "remember this"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=send_env(),
    )
    assert child.stderr is not None
    first = child.stderr.readline()
    os.kill(child.pid, signal.SIGKILL)
    child.wait(timeout=60)
    child.stderr.close()
    assert first.startswith("[sent: 13 characters, committed to session ")
    assert stored_path(tmp_path)[0] == ("user", "remember this", False)


def test_long_text_from_a_file_and_from_standard_input(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    text = "".join(f"line {i}: the quick brown fox\n" for i in range(4000))  # ~120 KB
    message = tmp_path / "message.txt"
    message.write_text(text, encoding="utf-8")
    loopback.queue(Reply(text="Read it."), Reply(text="Read that too."))
    out = subprocess.run(
        send_command(tmp_path, loopback.openai_base, "--new", "--file", str(message)),
        capture_output=True, text=True, env=send_env(), timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert f"[sent: {len(text):,} characters" in out.stderr
    sent = loopback.requests[-1].body["messages"][-1]["content"]
    assert (sent if isinstance(sent, str) else sent[-1]["text"]) == text.strip()
    session = json.loads(
        subprocess.run(
            [sys.executable, "-m", "treechat.cli", "sessions", "--json", "--data-dir",
             str(tmp_path)],
            capture_output=True, text=True, env=send_env(), timeout=300, check=True,
        ).stdout
    )[0]["id"]
    out = subprocess.run(
        send_command(tmp_path, loopback.openai_base, session[:8], "--file", "-"),
        input="second, from a pipe\n", capture_output=True, text=True, env=send_env(), timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    roles_and_text = [(role, t) for role, t, _ in stored_path(tmp_path)]
    assert roles_and_text == [
        ("user", text.strip()),
        ("assistant", "Read it."),
        ("user", "second, from a pipe"),
        ("assistant", "Read that too."),
    ]


def test_a_message_longer_than_the_window_is_not_cut_silently(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    text = "word " * 200_000  # a million characters, far past a 128k-token window
    message = tmp_path / "huge.txt"
    message.write_text(text, encoding="utf-8")
    loopback.queue(Reply(text="ok"))
    out = subprocess.run(
        send_command(tmp_path, loopback.openai_base, "--new", "--file", str(message)),
        capture_output=True, text=True, env=send_env(), timeout=300, check=False,
    )
    assert "Traceback" not in out.stderr
    assert f"[sent: {len(text):,} characters" in out.stderr
    # Either the turn is refused with a clear error or it goes with a note of what was cut;
    # never a reply to a silently shortened message.
    if out.returncode == 0:
        assert "only part of it was sent" in out.stderr
    else:
        assert out.stderr.strip().splitlines()[-1].startswith("treechat: ")
    assert stored_path(tmp_path)[0][1] == text.strip()  # stored whole either way


def test_attach_is_repeatable_and_a_file_that_cannot_be_sent_sends_nothing(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    from tests.support.attachment_files import png

    picture = tmp_path / "chart.png"
    picture.write_bytes(png(120, 80))
    notes = tmp_path / "notes.txt"
    notes.write_text("the figures are in thousands\n", encoding="utf-8")
    loopback.queue(Reply(text="A chart."))
    out = subprocess.run(
        send_command(tmp_path / "data", loopback.openai_base, "--new", "What is this?",
                     "--attach", str(picture), "--attach", str(notes)),
        capture_output=True, text=True, env=send_env(), timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "[sent: 13 characters and 2 files," in out.stderr
    blocks = loopback.requests[-1].body["messages"][-1]["content"]
    kinds = [b["type"] for b in blocks]
    assert kinds.count("image_url") == 1
    assert "File: notes.txt\n```\nthe figures are in thousands\n```" in [
        b.get("text") for b in blocks]

    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    refused = subprocess.run(
        send_command(tmp_path / "other", loopback.openai_base, "--new", "Look",
                     "--attach", str(binary)),
        capture_output=True, text=True, env=send_env(), timeout=300, check=False,
    )
    assert refused.returncode != 0
    assert "blob.bin is a binary file" in refused.stderr and "nothing was sent" in refused.stderr
    assert len(loopback.requests) == 1


def test_a_fifo_or_a_silent_pipe_ends_the_read_at_its_bound(tmp_path: Path) -> None:
    """Every path into a message honours the message cap and the read's time bounds."""
    import argparse

    from treechat.cli._common import CliInputError
    from treechat.cli.send import message_text
    from treechat.core.bounded_read import Bounds

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    args = argparse.Namespace(file=str(fifo), text=None)
    with pytest.raises(CliInputError, match=r"is a pipe that no program wrote to within 0\.3 s; "
                                            r"nothing was sent"):
        message_text(args, Bounds(cap=1024, deadline=5.0, idle=0.3))
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(CliInputError, match=r"big\.txt is 2 KB, larger than 1 KB"):
        message_text(argparse.Namespace(file=str(big), text=None), Bounds(cap=1024))


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_send_file_dev_zero_is_refused_in_one_line_and_nothing_is_stored(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    out = subprocess.run(
        send_command(tmp_path, loopback.openai_base, "--new", "--file", "/dev/zero"),
        capture_output=True, text=True, env=send_env(), timeout=120, check=False,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "treechat: /dev/zero is larger than 64 MB, the most that is read from it; "
        "nothing was sent"
    )
    assert not loopback.requests


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    data = tmp_path / "data"
    with Store.open(default_store_path(data)) as store:
        store.call(lambda r: r.create_session(Session("abc111", "One", None, "m", 1.0)))
    return data


@pytest.mark.parametrize("text", ["   ", "\n\t  \n"])
def test_a_whitespace_only_message_sends_nothing(data_dir: Path, text: str) -> None:
    assert "empty" in one_line_error(treechat(data_dir, "send", "abc111", text))
    with Store.open(default_store_path(data_dir)) as store:
        assert store.call(lambda r: r.node_count()) == 0


def test_send_needs_a_message_from_somewhere(data_dir: Path) -> None:
    line = one_line_error(treechat(data_dir, "send", "abc111"))
    assert "SESSION" in line and "--file" in line


def test_send_refuses_a_file_that_is_not_text(data_dir: Path, tmp_path: Path) -> None:
    blob = tmp_path / "blob.bin"
    blob.write_bytes(b"\xff\xfe\x00garbage")
    assert "not UTF-8 text" in one_line_error(treechat(data_dir, "send", "abc111",
                                                       "--file", str(blob)))
    missing = treechat(data_dir, "send", "abc111", "--file", str(tmp_path / "missing.txt"))
    assert "cannot read" in one_line_error(missing)


TABLES_WHILE_STREAMING = """
import json, sys, threading, time
import tiktoken.registry
from tests.support.loopback_server import LoopbackProvider, Reply
from treechat.cli import main
from treechat.providers import tokenizer

server = LoopbackProvider()
resume = threading.Event()
server.queue(Reply(text="one two three four five six", pause_after=2, resume=resume))
seen = {}

def watch():
    deadline = time.monotonic() + 240
    while not (server.requests and server.requests[0].pieces_sent >= 2):
        if time.monotonic() > deadline:
            break
        time.sleep(0.02)
    # the reply is paused mid-stream until `resume`: what the process holds now
    seen["streaming"] = bool(server.requests) and server.requests[0].pieces_sent >= 2
    seen["loaded"] = sorted(tokenizer._encodings)
    seen["registry"] = {name: type(enc).__name__
                        for name, enc in tiktoken.registry.ENCODINGS.items()}
    seen["litellm"] = "litellm" in sys.modules
    resume.set()

threading.Thread(target=watch, daemon=True).start()
try:
    seen["code"] = main(["send", "--new", "hello", "--model", "openai/gpt-4o-mini",
                         "--api-base", server.openai_base, "--data-dir", sys.argv[1]])
finally:
    resume.set()
    server.stop()
seen["loaded_after"] = sorted(tokenizer._encodings)
print()
print(json.dumps(seen))
"""


def test_a_send_does_not_hold_the_token_tables_while_the_reply_streams(tmp_path: Path) -> None:
    """The context is counted before the request; the 45 MB of o200k tables are let go of
    (ours and tiktoken's registry's) before litellm loads, and nothing loads them again
    for the reply: a send's peak memory is litellm's, not litellm's and the tables'."""
    done = subprocess.run(
        [sys.executable, "-c", TABLES_WHILE_STREAMING, str(tmp_path)],
        capture_output=True, text=True, env=send_env(), timeout=300, check=False,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["code"] == 0, done.stderr[-3000:]
    assert "one two three four five six" in done.stdout
    assert seen["streaming"] is True and seen["litellm"] is True
    assert seen["loaded"] == []
    # (the loopback server in the same process measures prompts with its own cl100k tables)
    assert seen["registry"].get("o200k_base", "DeferredEncoding") == "DeferredEncoding"
    assert seen["loaded_after"] == []  # nor after it: usage, cost and the record need none
    assert [role for role, *_ in stored_path(tmp_path)] == ["user", "assistant"]


def test_stream_lines_that_could_not_be_read_are_counted_in_a_line(tmp_path: Path) -> None:
    from tests.support.raw_http import RawServer

    def chunk(content: str | None, finish: str | None = None) -> str:
        delta = {"content": content} if content else {}
        return "data: " + json.dumps({
            "id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

    server = RawServer()
    server.route("/v1/chat/completions",
                 chunk("Hello ") + "data: {not json at all\n\n" + chunk("world")
                 + chunk(None, "stop") + "data: [DONE]\n\n",
                 content_type="text/event-stream")
    try:
        done = subprocess.run(send_command(tmp_path, f"{server.url}/v1", "--new", "hi"),
                              capture_output=True, text=True, env=send_env(), timeout=240,
                              check=False)
    finally:
        server.stop()
    assert "Traceback" not in done.stderr, done.stderr
    assert ("treechat: 1 line(s) of the server's stream could not be read and were left out"
            in done.stderr), done.stderr
    assert stored_path(tmp_path)[-1][:2] == ("assistant", "Hello world")
