"""The probe set of hostile inputs `bench_reliability` runs: endless and oversized files, pipes
and FIFOs for `send`; servers that list models forever, stall mid-reply or send more than they
declared; imports nested far too deep or not JSON at all; images and text that cost more
decoded than on disk; addresses that are not addresses; Ctrl+C in the first instants; a
stream line that never ends, a model list of one 50 MB string, a zip of 100,000 files, an MCP
server writing 1 GB on its standard error, Ctrl+C in the middle of a reply, and a `send`
into a 200 MB store.

`hostile_probe_set(folder)` builds the files and servers, runs every probe and returns the
report, with the peak memory of an ordinary `send` beside it for scale.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

from tests.support.hostile_probes import (
    Probe,
    ProbeReport,
    blank_png,
    cli_env,
    deep_claude_export,
    many_file_zip,
    run_probe,
    sparse_file,
    text_file,
    treechat,
)
from tests.support.hub_server import Hub, HubServer
from tests.support.loopback_server import LoopbackProvider, Reply
from tests.support.raw_http import RawServer

MODEL = "openai/gpt-4o-mini"
CTRL_C_PROBES = 12


def _send(base: str, *args: str) -> list[str]:
    return treechat("send", *args, "--model", MODEL, "--api-base", base)


def hostile_probe_set(folder: Path, *, seed: int = 29) -> tuple[ProbeReport, float]:
    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "data"
    env = cli_env(data)
    rng = random.Random(seed)
    loop = LoopbackProvider(tokens_per_second=40)
    stalling = LoopbackProvider()
    slow = LoopbackProvider(tokens_per_second=20)  # a reply of 100 s, stopped in the middle
    slow.queue(Reply(text=" ".join(f"w{i}" for i in range(2000))))
    long = LoopbackProvider()  # a reply of 8,000 pieces, as fast as it can be read
    long.queue(Reply(text=" ".join(f"w{i}" for i in range(8_000))))
    raw = RawServer()
    entry = json.dumps({"id": "model", "object": "model"}).encode()
    raw.route("/v1/models", b'{"object": "list", "data": [' + (entry + b",") * 2000,
              endless=True)
    # one model whose id is a 50 MB string
    raw.route("/long/v1/models",
              b'{"object": "list", "data": [{"object": "model", "id": "' + b"m" * (50 << 20)
              + b'"}]}')
    # a `data:` line that never ends
    raw.route("/line/v1/chat/completions",
              b'data: {"choices": [{"delta": {"content": "' + b"a" * 65_536,
              content_type="text/event-stream", endless=True)
    gguf = folder / "model.gguf"
    gguf.write_bytes(b"GGUF" + os.urandom(256 * 1024))
    hub = Hub(endless=True)
    hub.add("probe/endless-GGUF", "model.gguf", gguf)
    fifo = folder / "pipe"
    os.mkfifo(fifo)
    files = {
        "sparse": sparse_file(folder / "sparse.txt", 5 * 1024**3),
        "text70": text_file(folder / "big.txt", 70 * 1024 * 1024),
        "text30": text_file(folder / "thirty.txt", 30 * 1024 * 1024),
        "png": blank_png(folder / "blank.png", 9400, 9400),
        "deep": deep_claude_export(folder / "deep.json", 200_000),
        "zip": many_file_zip(folder / "many.zip", 100_000),
    }
    big_data = folder / "big-data"
    big_data.mkdir(exist_ok=True)
    _store_of_size_in_a_child(big_data / "treechat.duckdb", 200_000_000)
    flood = [sys.executable, str(Path(__file__).with_name("hostile_mcp.py")), "--stderr-mb",
             "1024"]
    garbage = folder / "garbage.json"
    garbage.write_bytes(bytes(rng.randrange(256) for _ in range(4096)))
    base = loop.openai_base
    report = ProbeReport()
    try:
        with HubServer(hub) as hub_server:
            loop.queue(*(Reply(text=" ".join(f"w{i}" for i in range(120))) for _ in range(64)))
            baseline = run_probe(Probe("baseline", _send(base, "--new", "hello")), env)
            probes = [
                Probe("send --file /dev/zero", _send(base, "--new", "--file", "/dev/zero"),
                      expect="larger than 64 MB"),
                Probe("send --file 5 GB sparse", _send(base, "--new", "--file",
                                                       str(files["sparse"])),
                      expect="larger than 64 MB"),
                Probe("send --file 70 MB text", _send(base, "--new", "--file",
                                                      str(files["text70"])),
                      expect="larger than 64 MB"),
                Probe("send --file FIFO, no writer", _send(base, "--new", "--file", str(fifo)),
                      expect="no program wrote to within"),
                Probe("yes | send --new -", _send(base, "--new", "-"), stdin="yes",
                      expect="standard input is larger than 64 MB"),
                Probe("connections add: endless /v1/models",
                      treechat("connections", "add", "--kind", "openai-compatible", "--name",
                               "endless", "--base-url", f"{raw.url}/v1"),
                      expect="larger than 8 MB"),
                Probe("connections add: CR/LF in the base URL",
                      treechat("connections", "add", "--kind", "openai-compatible", "--name",
                               "evil", "--base-url", "http://127.0.0.1:9/v1\r\nX-Evil: 1"),
                      expect="control character"),
                Probe("send --api-base port 99999",
                      _send("http://127.0.0.1:99999/v1", "--new", "hi"),
                      expect="invalid port"),
                Probe("send: reply stalls after one piece",
                      treechat("send", "--new", "hi", "--model", "stall/gpt-4o-mini"),
                      setup=lambda: _stalling_connection(stalling, env),
                      expect="stopped sending for 5 s"),
                Probe("import: 200,000-deep JSON", treechat("import", str(files["deep"])),
                      expect="nested"),
                Probe("import: random bytes", treechat("import", str(garbage))),
                Probe("send --attach 9400x9400 PNG",
                      _send(base, "--new", "look", "--attach", str(files["png"]))),
                Probe("send --attach 30 MB text",
                      _send(base, "--new", "read", "--attach", str(files["text30"]))),
                Probe("models pull: mirror sends more than declared",
                      treechat("models", "pull", "probe/endless-GGUF", "model.gguf"),
                      expect="than the"),
                Probe("backup restore ''", treechat("backup", "restore", ""),
                      expect="give the name of a backup"),
                Probe("send: a stream line that never ends",
                      _send(f"{raw.url}/line/v1", "--new", "hi"),
                      expect="sent a line of more than 4,000,000 characters"),
                Probe("connections add: a model id of 50 MB",
                      treechat("connections", "add", "--kind", "openai-compatible", "--name",
                               "long", "--base-url", f"{raw.url}/long/v1"),
                      expect="larger than 8 MB"),
                Probe("import: a zip of 100,000 files", treechat("import", str(files["zip"])),
                      expect="no conversations"),
                Probe("mcp test: 1 GB on standard error", treechat("mcp", "test", "flood"),
                      setup=lambda: _add_mcp_server("flood", flood, env), expect="ready in"),
                Probe("Ctrl+C in the middle of a reply",
                      _send(slow.openai_base, "--new", "a long one"), sigint_after=20.0,
                      expect="the message and the reply so far are kept"),
                Probe("send: a reply of 8,000 words", _send(long.openai_base, "--new", "go"),
                      expect="[session "),
                Probe("send into a 200 MB store",
                      [*_send(base, "--new", "hello"), "--data-dir", str(big_data)],
                      expect="[session "),
            ]
            probes += [
                Probe(f"Ctrl+C at {at:.2f} s", _send(base, "--new", f"interrupted {i}"),
                      sigint_after=at)
                for i, at in enumerate(rng.uniform(0.1, 2.5) for _ in range(CTRL_C_PROBES))
            ]
            pull_env = {**env, "HF_ENDPOINT": hub_server.url, "HF_HUB_OFFLINE": "0"}
            for probe in probes:
                chosen = pull_env if probe.name.startswith("models pull") else env
                report.results.append(run_probe(probe, chosen))
    finally:
        loop.stop()
        stalling.stop()
        slow.stop()
        long.stop()
        raw.stop()
    return report, baseline.peak_rss_mb


def _store_of_size_in_a_child(path: Path, size: int) -> None:
    """Built in a process of its own: a child's peak memory (`wait4`) starts from what its
    parent had at its peak, so the gigabyte the backup of it takes would count in every
    probe's."""
    import subprocess

    subprocess.run(
        [sys.executable, "-c", "import sys\nfrom pathlib import Path\n"
         "from tests.support.hostile_probes import store_of_size\n"
         "store_of_size(Path(sys.argv[1]), int(sys.argv[2]))", str(path), str(size)],
        check=True, timeout=1800, cwd=Path(__file__).resolve().parents[2],
    )


def _add_mcp_server(name: str, command: list[str], env: dict[str, str]) -> None:
    import subprocess

    subprocess.run(treechat("mcp", "add", name, "--", *command), env=env,
                   capture_output=True, timeout=120, check=False)


def _stalling_connection(server: LoopbackProvider, env: dict[str, str]) -> None:
    import subprocess

    server.queue(Reply(text="one two three", pause_after=1))
    subprocess.run(
        treechat("connections", "add", "--kind", "openai-compatible", "--name", "stall",
                 "--base-url", server.openai_base, "--model", "gpt-4o-mini",
                 "--timeout", "5"),
        env=env, capture_output=True, timeout=120, check=False,
    )
