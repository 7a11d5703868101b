"""Hostile inputs thrown at the `treechat` command, one process each, bounded in time: what
each cost at its peak (resident memory), whether it ended in a traceback or an abort, and
whether it was still running when its time was up.

A probe is a command line (and what feeds its standard input, and when it is sent Ctrl+C);
the servers and files it points at are built by the caller (`tests/benchmarks`,
`tests/e2e/test_hostile_inputs.py`).
"""

from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

PROBE_TIMEOUT_S = 60.0


@dataclass
class Probe:
    name: str
    args: Sequence[str]
    stdin: str | None = None  # "yes": an endless pipe of lines; None: nothing (/dev/null)
    sigint_after: float | None = None
    setup: Callable[[], None] | None = None
    expect: str = ""  # a phrase the one-line answer holds (empty: not checked)


@dataclass
class ProbeResult:
    name: str
    returncode: int
    seconds: float
    peak_rss_mb: float
    stderr: str  # and standard output, interleaved
    hang: bool
    expect: str = ""

    @property
    def traceback(self) -> bool:
        """A Python traceback, or a process that died of a signal it did not ask for
        (an abort, a segfault)."""
        died = self.returncode < 0 and not self.hang
        return "Traceback (most recent call last)" in self.stderr or died

    @property
    def answered(self) -> bool:
        return not self.expect or self.expect in self.stderr


@dataclass
class ProbeReport:
    results: list[ProbeResult] = field(default_factory=list)

    @property
    def max_rss_mb(self) -> float:
        return max((r.peak_rss_mb for r in self.results), default=0.0)

    @property
    def tracebacks(self) -> int:
        return sum(1 for r in self.results if r.traceback)

    @property
    def hangs(self) -> int:
        return sum(1 for r in self.results if r.hang)

    @property
    def unanswered(self) -> list[str]:
        return [r.name for r in self.results if not r.answered]


def cli_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "OPENAI_API_KEY": "sk-probe",
           "TREECHAT_DATA_DIR": str(data_dir),
           # never this machine's keychain
           "PYTHON_KEYRING_BACKEND": "keyring.backends.fail.Keyring", **extra}
    return env


def treechat(*args: str) -> list[str]:
    return [sys.executable, "-m", "treechat.cli", *args]


def _interruptible() -> None:
    """Children get Ctrl+C as at a terminal, even when this runner was started in the
    background: a shell starts background jobs with SIGINT ignored, and an ignored signal
    stays ignored across exec (a handled one does not), so a probe's Ctrl+C would be lost."""
    import threading

    if (signal.getsignal(signal.SIGINT) == signal.SIG_IGN
            and threading.current_thread() is threading.main_thread()):
        signal.signal(signal.SIGINT, signal.default_int_handler)


def high_water_mb(pid: int) -> float | None:
    """A live process's own peak resident size (`VmHWM`, counted from its exec), in MB; None
    where /proc does not say (another system, or the process has ended)."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _tree(pid: int) -> list[int]:
    import psutil

    try:
        return [pid, *(c.pid for c in psutil.Process(pid).children(recursive=True))]
    except psutil.Error:
        return [pid]


def run_probe(probe: Probe, env: dict[str, str], timeout: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Run one probe to its end or its time bound, and its own peak memory.

    The peak is the largest high-water mark of the child and its own children, read every
    20 ms while it runs. `wait4`'s
    `ru_maxrss` cannot be used on Linux: exec carries the forking process's high-water mark
    into the child's, so a `sleep` started from a 500 MB parent reports 513 MB; here it
    reported this runner's own size for every probe. Where /proc is missing, `ru_maxrss` it
    is (an upper bound)."""
    _interruptible()
    if probe.setup is not None:
        probe.setup()
    feeder: subprocess.Popen[bytes] | None = None
    stdin: int | None = subprocess.DEVNULL
    if probe.stdin == "yes":
        feeder = subprocess.Popen(
            [sys.executable, "-c",
             "import sys\nb = b'y' * 65535 + b'\\n'\nwhile True: sys.stdout.buffer.write(b)"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
        stdin = feeder.stdout.fileno() if feeder.stdout is not None else None
    with tempfile.TemporaryFile() as err:
        started = time.monotonic()
        # what it says on either stream is its answer (`connections add` reports on stdout)
        child = subprocess.Popen(list(probe.args), stdin=stdin, stdout=err, stderr=err,
                                 env=env)
        if feeder is not None and feeder.stdout is not None:
            feeder.stdout.close()
        signalled = False
        hang = False
        status = 0
        usage = None
        polled: float | None = None
        while True:
            for member in _tree(child.pid):  # as `wait4`: the largest of it and its children
                hwm = high_water_mb(member)
                if hwm is not None:
                    polled = max(polled or 0.0, hwm)
            pid, status, usage = os.wait4(child.pid, os.WNOHANG)
            if pid:
                break
            elapsed = time.monotonic() - started
            if probe.sigint_after is not None and not signalled and elapsed >= probe.sigint_after:
                os.kill(child.pid, signal.SIGINT)
                signalled = True
            if elapsed > timeout:
                hang = True
                os.kill(child.pid, signal.SIGKILL)
                _, status, usage = os.wait4(child.pid, 0)
                break
            time.sleep(0.02)
        child.returncode = os.waitstatus_to_exitcode(status)
        seconds = time.monotonic() - started
        if feeder is not None:
            feeder.kill()
            feeder.wait()
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    peak = polled if polled is not None else (
        usage.ru_maxrss / (1024 * 1024 if sys.platform == "darwin" else 1024))
    return ProbeResult(probe.name, child.returncode, seconds, peak, stderr, hang, probe.expect)


def run_probes(probes: Sequence[Probe], env: dict[str, str],
               timeout: float = PROBE_TIMEOUT_S) -> ProbeReport:
    report = ProbeReport()
    for probe in probes:
        report.results.append(run_probe(probe, env, timeout))
    return report


# --- hostile files ---------------------------------------------------------------------------


def sparse_file(path: Path, size: int) -> Path:
    with path.open("wb") as f:
        f.truncate(size)
    return path


def text_file(path: Path, size: int) -> Path:
    line = b"the quick brown fox jumps over the lazy dog 0123456789\n"
    with path.open("wb") as f:
        block = line * (1024 * 1024 // len(line))
        while f.tell() < size:
            f.write(block[: size - f.tell()])
    return path


def blank_png(path: Path, width: int, height: int) -> Path:
    """An RGBA PNG of zeros written row by row: a few hundred KB on disk, `width * height * 4`
    bytes once decoded."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))

    packer = zlib.compressobj(9)
    row = b"\x00" * (1 + width * 4)
    parts = [packer.compress(row) for _ in range(height)]
    parts.append(packer.flush())
    with path.open("wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 6, 0, 0, 0)))
        f.write(chunk(b"IDAT", b"".join(parts)))
        f.write(chunk(b"IEND", b""))
    return path


def deep_claude_export(path: Path, depth: int) -> Path:
    """A Claude.ai export whose assistant calls a tool with arguments nested `depth` lists
    deep (kept as the call's input, so it reaches what is stored)."""
    inner = "[" * depth + "]" * depth
    stamp = '"created_at": "2024-01-01T00:00:00Z"'
    path.write_text(
        f'[{{"uuid": "c1", "name": "Deep", {stamp}, "updated_at": "2024-01-01T00:00:00Z", '
        f'"chat_messages": [{{"uuid": "m1", "sender": "human", "text": "hi", {stamp}, '
        '"content": [{"type": "text", "text": "hi"}], "attachments": [], "files": []}, '
        f'{{"uuid": "m2", "sender": "assistant", "text": "", {stamp}, '
        '"content": [{"type": "tool_use", "id": "t1", "name": "probe", '
        f'"input": {{"deep": {inner}}}}}], "attachments": [], "files": []}}]}}]',
        encoding="utf-8",
    )
    return path


def many_file_zip(path: Path, files: int) -> Path:
    """An export zip of `files` one-byte members beside an empty `conversations.json`: a
    central directory of 100,000 entries costs what reading it costs, whatever the members."""
    import zipfile

    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as archive:
        for i in range(files):
            archive.writestr(f"files/f{i}.txt", b"x")
        archive.writestr("conversations.json", b"[]")
    return path


def store_of_size(path: Path, size: int) -> Path:
    """A store of one chat whose messages (hex digests: they do not compress away) fill
    about `size` bytes, with a backup made today: the next `send` reads it all (its
    integrity check) but owes no daily backup."""
    from treechat.store.database import Store

    from .big_store import fill_store

    fill_store(path, size)
    with Store.open(path) as store:
        store.backup("daily")
    return path
