"""The crash loop: `treechat send` against a slow loopback provider, killed with SIGKILL at a
random moment from spawn to the end of the reply, then the store is opened and checked.

After every kill: the store opens; every message whose acknowledgment was printed is in it,
exactly once; a reply that had started streaming is there (interrupted) with what the draft
had flushed; no edge points at a missing node.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from tests.support.loopback_server import LoopbackProvider, Reply, _pieces

from treechat.services.store_life.recovery import open_and_recover
from treechat.store.database import default_store_path

REPLY = " ".join(f"word{i}" for i in range(160))  # 160 pieces
TOKENS_PER_SECOND = 40.0  # four seconds of streaming


@dataclass
class Kill:
    message: str
    at_s: float
    acknowledged: bool
    streamed_chars: int  # what the server had sent when the process died
    recovered_chars: int | None = None  # the reply found after reopening (None: no reply)
    present: bool = False
    duplicates: int = 0


@dataclass
class LoopReport:
    kills: list[Kill] = field(default_factory=list)
    orphan_edges: int = 0
    store_failures: int = 0
    full_run_s: float = 0.0

    @property
    def lost_acknowledged(self) -> int:
        return sum(1 for k in self.kills if k.acknowledged and not k.present)

    @property
    def duplicates(self) -> int:
        return sum(k.duplicates for k in self.kills)

    @property
    def started(self) -> list[Kill]:
        return [k for k in self.kills if k.streamed_chars > 0]

    @property
    def recovered_partial_ratio(self) -> float:
        started = self.started
        if not started:
            return 1.0
        return sum(1 for k in started if k.recovered_chars is not None) / len(started)

    def tail_chars_lost(self) -> list[int]:
        return [
            max(k.streamed_chars - (k.recovered_chars or 0), 0)
            for k in self.started
            if k.recovered_chars is not None
        ]


def _env() -> dict[str, str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-crash"}
    env.pop("TREECHAT_DATA_DIR", None)
    return env


def _streamed_chars(server: LoopbackProvider, message: str) -> int:
    pieces = list(_pieces(REPLY))
    for rec in server.requests:
        messages = rec.body.get("messages") or []
        last = messages[-1].get("content") if messages else None
        text = last if isinstance(last, str) else str(last)
        if message in text:
            return len("".join(pieces[: rec.pieces_sent]))
    return 0


def send_and_kill(
    data_dir: Path, server: LoopbackProvider, message: str, kill_after: float | None
) -> tuple[bool, float]:
    """Run one `send`; SIGKILL it after `kill_after` seconds (None: let it finish).
    Returns (acknowledged before the kill, seconds it ran)."""
    command = [
        sys.executable, "-m", "treechat.cli", "send", "--new", message,
        "--model", "openai/gpt-4o-mini", "--api-base", server.openai_base,
        "--data-dir", str(data_dir),
    ]
    started = time.monotonic()
    child = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=_env()
    )
    acked = threading.Event()

    def watch() -> None:
        assert child.stderr is not None
        for line in child.stderr:
            if line.startswith("[sent:"):
                acked.set()

    reader = threading.Thread(target=watch, daemon=True)
    reader.start()
    if kill_after is None:
        child.wait(timeout=300)
    else:
        try:
            child.wait(timeout=kill_after)
        except subprocess.TimeoutExpired:
            # what the test knows when it pulls the plug is what had been printed by then
            was_acked = acked.is_set()
            os.kill(child.pid, signal.SIGKILL)
            child.wait(timeout=60)
            _finish(reader, child)
            return was_acked, time.monotonic() - started
    _finish(reader, child)
    return acked.is_set(), time.monotonic() - started


def _finish(reader: threading.Thread, child: subprocess.Popen[str]) -> None:
    reader.join(timeout=10)
    if child.stderr is not None:
        child.stderr.close()


def check_store(data_dir: Path, report: LoopReport, kill: Kill) -> None:
    try:
        store = open_and_recover(default_store_path(data_dir))
    except Exception:
        report.store_failures += 1
        return
    try:
        rows = store.call(
            lambda r: r.con.execute(
                "SELECT id, role, output::VARCHAR, predecessor, caller, session_id FROM nodes"
            ).fetchall()
        )
        heads = store.call(
            lambda r: r.con.execute("SELECT head FROM sessions WHERE head IS NOT NULL").fetchall()
        )
    finally:
        store.close()
    ids = {row[0] for row in rows}
    report.orphan_edges = sum(
        1 for row in rows for edge in (row[3], row[4]) if edge is not None and edge not in ids
    ) + sum(1 for (head,) in heads if head not in ids)
    users = [row for row in rows if row[1] == "user" and json.loads(row[2]) == kill.message]
    kill.present = bool(users)
    kill.duplicates = max(len(users) - 1, 0)
    if users:
        replies = [row for row in rows if row[1] == "assistant" and row[3] == users[0][0]]
        if replies:
            kill.recovered_chars = max(len(json.loads(r[2]) or "") for r in replies)


def run_crash_loop(data_dir: Path, kills: int, seed: int = 21) -> LoopReport:
    """`kills` runs of `send`, each killed at a random point between spawn and the end of a
    reply (the length of a full run, measured first)."""
    rng = random.Random(seed)
    report = LoopReport()
    server = LoopbackProvider(tokens_per_second=TOKENS_PER_SECOND)
    try:
        for _ in range(kills + 1):
            server.queue(Reply(text=REPLY))
        _, full = send_and_kill(data_dir, server, "calibration: a whole run", None)
        report.full_run_s = full
        for i in range(kills):
            message = f"crash-loop message {i}"
            at = rng.uniform(0.0, full)
            acked, _ = send_and_kill(data_dir, server, message, at)
            kill = Kill(message, at, acked, _streamed_chars(server, message))
            check_store(data_dir, report, kill)
            report.kills.append(kill)
    finally:
        server.stop()
    return report
