"""`treechat send` as a user runs it: the message is committed and acknowledged before the
slow part starts, long text comes from a file or standard input, and Ctrl+C, SIGTERM and
SIGHUP stop the reply keeping what streamed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.support.loopback_server import LoopbackProvider, Reply

from treechat.core.dag import Graph, active_path
from treechat.services.store_life.recovery import open_and_recover
from treechat.store.database import default_store_path


def env() -> dict[str, str]:
    out = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-send-test"}
    out.pop("TREECHAT_DATA_DIR", None)
    return out


def send_command(data: Path, server: LoopbackProvider, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "treechat.cli", "send", *args,
        "--model", "openai/gpt-4o-mini", "--api-base", server.openai_base,
        "--data-dir", str(data),
    ]


def stored_path(data: Path) -> list[tuple[str, str, bool]]:
    store = open_and_recover(default_store_path(data))
    try:
        (session,) = store.call(lambda r: r.list_sessions())
        nodes = store.call(lambda r: r.session_nodes(session.id))
    finally:
        store.close()
    return [(n.role, n.text, n.interrupted) for n in active_path(Graph(nodes), session.head)]


def test_the_message_is_on_disk_when_the_acknowledgment_is_printed(
    tmp_path: Path, loopback: LoopbackProvider
) -> None:
    """Killed the moment `[sent: …]` appears, before any reply: the message is there."""
    loopback.queue(Reply(text="never seen", tokens_per_second=5))
    child = subprocess.Popen(
        send_command(tmp_path, loopback, "--new", "remember this"),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env(),
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
        send_command(tmp_path, loopback, "--new", "--file", str(message)),
        capture_output=True, text=True, env=env(), timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert f"[sent: {len(text):,} characters" in out.stderr
    sent = loopback.requests[-1].body["messages"][-1]["content"]
    assert (sent if isinstance(sent, str) else sent[-1]["text"]) == text.strip()
    session = json.loads(
        subprocess.run(
            [sys.executable, "-m", "treechat.cli", "sessions", "--json", "--data-dir",
             str(tmp_path)],
            capture_output=True, text=True, env=env(), timeout=300, check=True,
        ).stdout
    )[0]["id"]
    out = subprocess.run(
        send_command(tmp_path, loopback, session[:8], "--file", "-"),
        input="second, from a pipe\n", capture_output=True, text=True, env=env(), timeout=300,
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
        send_command(tmp_path, loopback, "--new", "--file", str(message)),
        capture_output=True, text=True, env=env(), timeout=300, check=False,
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


@pytest.mark.parametrize(
    ("sig", "name"),
    [(signal.SIGINT, "Ctrl+C"), (signal.SIGTERM, "SIGTERM"), (signal.SIGHUP, "SIGHUP")],
)
def test_a_signal_during_the_reply_keeps_what_streamed(
    tmp_path: Path, loopback: LoopbackProvider, sig: signal.Signals, name: str
) -> None:
    # The stream pauses after 60 pieces until the server stops, so the signal always lands
    # mid-reply however slow the machine is.
    loopback.queue(Reply(text=" ".join(f"w{i}" for i in range(400)), pause_after=60))
    child = subprocess.Popen(
        send_command(tmp_path, loopback, "--new", "tell me a long story"),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env(),
    )
    assert child.stdout is not None and child.stderr is not None
    seen: list[str] = []
    streaming = threading.Event()

    def read_stdout() -> None:
        assert child.stdout is not None
        while piece := child.stdout.read(1):
            seen.append(piece)
            if len("".join(seen)) > 40:
                streaming.set()

    reader = threading.Thread(target=read_stdout)
    reader.start()
    assert streaming.wait(timeout=240), child.stderr.read()
    os.kill(child.pid, sig)
    code = child.wait(timeout=120)
    reader.join(timeout=30)
    err = child.stderr.read()
    child.stdout.close()
    child.stderr.close()
    assert code == 130, err
    assert f"stopped by {name}" in err and "Traceback" not in err
    path = stored_path(tmp_path)
    assert [p[0] for p in path] == ["user", "assistant"]
    _role, reply, interrupted = path[1]
    assert interrupted
    printed = "".join(seen).strip()
    assert reply.startswith("w0 w1 ") and printed.startswith(reply[: len(printed) // 2])


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
        send_command(tmp_path / "data", loopback, "--new", "What is this?",
                     "--attach", str(picture), "--attach", str(notes)),
        capture_output=True, text=True, env=env(), timeout=300, check=False,
    )
    assert out.returncode == 0, out.stderr
    assert "[sent: 13 characters and 2 file(s)" in out.stderr
    blocks = loopback.requests[-1].body["messages"][-1]["content"]
    kinds = [b["type"] for b in blocks]
    assert kinds.count("image_url") == 1
    assert "File: notes.txt\n```\nthe figures are in thousands\n```" in [
        b.get("text") for b in blocks]

    binary = tmp_path / "blob.bin"
    binary.write_bytes(bytes(range(256)) * 8)
    refused = subprocess.run(
        send_command(tmp_path / "other", loopback, "--new", "Look", "--attach", str(binary)),
        capture_output=True, text=True, env=env(), timeout=300, check=False,
    )
    assert refused.returncode != 0
    assert "blob.bin is a binary file" in refused.stderr and "nothing was sent" in refused.stderr
    assert len(loopback.requests) == 1


def test_a_fifo_or_a_silent_pipe_ends_the_read_at_its_bound(tmp_path: Path) -> None:
    """Every path into a message honours the message cap and the read's time bounds."""
    import argparse

    from treechat.commands_send import CliInputError, message_text
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
        send_command(tmp_path, loopback, "--new", "--file", "/dev/zero"),
        capture_output=True, text=True, env=env(), timeout=120, check=False,
    )
    assert out.returncode == 2
    assert out.stderr.strip() == (
        "treechat: /dev/zero is larger than 64 MB, the most that is read from it; "
        "nothing was sent"
    )
    assert not loopback.requests
