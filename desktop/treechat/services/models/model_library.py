"""The model library as the window and the command line use it: recommended models, hub
search, downloads that run off the caller's thread with progress, pause, resume and cancel,
running one downloaded model at a time on the bundled llama.cpp server, removing models, and
pulling into a detected Ollama.

Returns what changed (a finished `InstalledModel`, the running `LibraryEndpoint`); nothing
here imports Qt, and every blocking call runs on a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ...providers.connections import BUNDLED_CONNECTION_LABEL, BUNDLED_LABEL
from ...providers.local.bundled_model import LocalModel, LocalModelError, find_gguf
from ...providers.local.bundled_server.main import default_threads
from ...providers.model_library import (
    DownloadControl,
    DownloadStopped,
    HubFile,
    HubRepo,
    InstalledModel,
    LibraryError,
    ModelLibrary,
    PartialDownload,
    Progress,
    RecommendedModel,
    recommended,
    size_text,
)

LIBRARY_CONNECTION = "library"
# The smallest window worth running a chat model with, and the most chosen without the user
# asking (a longer window costs RAM and prompt time on every request).
MIN_CONTEXT = 2048
MAX_AUTO_CONTEXT = 32768
# When a GGUF header does not give its layer shapes: a rough f16 KV-cache cost per token per
# GB of weights (measured ranges: ~60 KB for 7B models with grouped KV heads to ~400 KB for
# 3.8B models without).
KV_BYTES_PER_TOKEN_PER_GB = 150_000


def machine_ram_bytes() -> int:
    """Physical memory, or 8 GB when the platform does not say."""
    with contextlib.suppress(ValueError, OSError, AttributeError):
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    return 8 * 1024**3


def choose_context(trained: int | None, model_bytes: int, ram_bytes: int,
                   kv_bytes_per_token: int | None = None) -> int:
    """A window the machine can hold: the model's trained length, capped so that the weights
    plus the KV cache stay within half of the RAM, and at MAX_AUTO_CONTEXT."""
    trained = trained or 4096
    budget = ram_bytes // 2 - model_bytes
    per_token = kv_bytes_per_token or int(
        KV_BYTES_PER_TOKEN_PER_GB * max(model_bytes / 1e9, 0.1))
    fits = budget // max(per_token, 1) if budget > 0 else MIN_CONTEXT
    return int(max(MIN_CONTEXT, min(trained, MAX_AUTO_CONTEXT, fits)))


@dataclass(frozen=True)
class Recommendation:
    model: RecommendedModel
    installed: bool
    fits_ram: bool  # the machine has the RAM the model needs


@dataclass(frozen=True)
class BundledModel:
    """The model shipped with Treechat, as the library lists it beside the downloaded ones:
    it is always there and cannot be removed."""

    title: str  # the picker's name for it
    file: str
    size: int
    window: int  # the window it runs with (the trained one until its server has started)
    running: bool
    license: str = "Apache-2.0"


@dataclass(frozen=True)
class LibraryEndpoint:
    """The running library model, as a request reaches it."""

    name: str
    model_id: str  # litellm's string (`openai/<name>` with api_base)
    api_base: str
    window: int
    supports_tools: bool
    api_key: str = field(default="", repr=False)  # the server never checks it


class DownloadJob:
    """One download running on a worker thread. `progress` is the latest report; `done` is
    awaited for the installed model (or the error)."""

    def __init__(self, repo: str, file: str, control: DownloadControl,
                 task: asyncio.Task[InstalledModel]) -> None:
        self.repo = repo
        self.file = file
        self.control = control
        self.task = task
        self.progress: Progress | None = None

    def pause(self) -> None:
        self.control.pause()

    def cancel(self) -> None:
        self.control.cancel()

    async def done(self) -> InstalledModel:
        return await asyncio.shield(self.task)


class ModelLibraryService:
    def __init__(
        self,
        library: ModelLibrary,
        *,
        ram_bytes: Callable[[], int] = machine_ram_bytes,
        start_timeout: float = 300.0,
    ) -> None:
        self.library = library
        self._ram_bytes = ram_bytes
        self._start_timeout = start_timeout
        self._jobs: dict[tuple[str, str], DownloadJob] = {}
        self._running: tuple[InstalledModel, LocalModel] | None = None
        self._switching = asyncio.Lock()
        self._windows: dict[str, int] = {}

    # --- what there is --------------------------------------------------------------------

    async def recommended(self) -> list[Recommendation]:
        installed = {(m.repo, m.file) for m in await self.installed()}
        ram_gb = self._ram_bytes() / 1024**3
        return [
            Recommendation(m, (m.repo, m.file) in installed, m.ram_gb <= ram_gb)
            for m in await asyncio.to_thread(recommended)
        ]

    async def hub_problem(self) -> str | None:
        """None when the hub answers; otherwise why not, in words (one quick look)."""
        return await asyncio.to_thread(self.library.hub_problem)

    async def search(self, query: str) -> list[HubRepo]:
        return await asyncio.to_thread(self.library.search, query)

    async def files(self, repo: str) -> list[HubFile]:
        return await asyncio.to_thread(self.library.files, repo)

    async def installed(self) -> list[InstalledModel]:
        return await asyncio.to_thread(self.library.installed)

    async def partial(self) -> list[PartialDownload]:
        return await asyncio.to_thread(self.library.partial)

    async def add_file(self, path: Path) -> InstalledModel:
        return await asyncio.to_thread(self.library.add_file, path)

    async def bundled(self, server: LocalModel | None, window_hint: int) -> BundledModel | None:
        """The bundled model (None when this build has none): its file's size, the window
        it runs with (`window_hint` before its server started) and whether it runs now."""
        if server is None:
            return None
        try:
            gguf = await asyncio.to_thread(find_gguf)
            size = await asyncio.to_thread(lambda: gguf.stat().st_size)
        except (LocalModelError, OSError):
            return None
        running = server.running
        return BundledModel(f"{BUNDLED_CONNECTION_LABEL} · {BUNDLED_LABEL}", gguf.name, size,
                            server.window if running else window_hint, running)

    # --- downloads ------------------------------------------------------------------------

    def download(
        self, repo: str, file: str, *, on_progress: Callable[[Progress], None] | None = None,
    ) -> DownloadJob:
        """Start (or resume) a download; progress is reported on the caller's event loop."""
        key = (repo, file)
        job = self._jobs.get(key)
        if job is not None and not job.task.done():
            return job
        loop = asyncio.get_running_loop()
        control = DownloadControl()

        def report(progress: Progress) -> None:
            # Called on the worker thread: hand the figure to the loop's thread.
            def deliver() -> None:
                job_ref.progress = progress
                if on_progress is not None:
                    on_progress(progress)
            loop.call_soon_threadsafe(deliver)

        task = loop.create_task(asyncio.to_thread(
            self.library.download, repo, file, on_progress=report, control=control,
        ))
        job_ref = DownloadJob(repo, file, control, task)
        self._jobs[key] = job_ref
        task.add_done_callback(lambda _t: self._jobs.pop(key, None)
                               if self._jobs.get(key) is job_ref else None)
        return job_ref

    def jobs(self) -> list[DownloadJob]:
        return [job for job in self._jobs.values() if not job.task.done()]

    async def discard_partial(self, repo: str, file: str) -> None:
        await asyncio.to_thread(self.library.discard_partial, repo, file)

    # --- running --------------------------------------------------------------------------

    @property
    def running(self) -> LibraryEndpoint | None:
        if self._running is None:
            return None
        model, server = self._running
        if not server.running:
            return None
        return LibraryEndpoint(model.name, server.model_id, server.api_base, server.window,
                               model.supports_tools, server.api_key)

    def context_for(self, model: InstalledModel) -> int:
        """The window the model runs with: the one the user chose for it, else one chosen
        from its trained length and the RAM."""
        if model.name in self._windows:
            return self._windows[model.name]
        return choose_context(model.context_length, model.size, self._ram_bytes(),
                              model.kv_bytes_per_token)

    async def run(self, name: str, *, context: int | None = None,
                  threads: int | None = None) -> LibraryEndpoint:
        """Load a downloaded model on the bundled llama.cpp server, unloading the one that
        ran before (one local model at a time)."""
        model = await asyncio.to_thread(self.library.find, name)
        if context is not None:
            self._windows[model.name] = context
        context = self.context_for(model)
        async with self._switching:
            current = self.running
            if current is not None and current.name == model.name and context == current.window:
                return current
            await self.unload()
            server = LocalModel(
                Path(model.path), name=model.name, n_ctx=context,
                threads=threads or default_threads(), start_timeout=self._start_timeout,
            )
            try:
                await server.start()
            except LocalModelError as exc:
                raise LibraryError(f"{model.name} did not start: {exc}") from exc
            self._running = (model, server)
            endpoint = self.running
            assert endpoint is not None
            return endpoint

    async def unload(self) -> None:
        if self._running is not None:
            _, server = self._running
            self._running = None
            await server.stop()

    async def remove(self, name: str) -> int:
        """Delete a model and free its disk space; chats made with it stay in the store."""
        current = self.running
        if current is not None and current.name == name:
            await self.unload()
        return await asyncio.to_thread(self.library.remove, name)

    # --- Ollama ---------------------------------------------------------------------------

    async def ollama_pull(
        self, base_url: str, model: str, *,
        on_progress: Callable[[str, int, int], None] | None = None,
    ) -> None:
        """Ask a detected Ollama to pull `model` (`/api/pull`), reporting its status lines
        with bytes completed and total."""
        url = base_url.rstrip("/").removesuffix("/v1") + "/api/pull"
        timeout = httpx.Timeout(30.0, read=300.0)
        async with httpx.AsyncClient(timeout=timeout, trust_env=False) as client, \
                client.stream("POST", url, json={"model": model, "stream": True}) as response:
            if response.status_code >= 400:
                body = (await response.aread()).decode("utf-8", "replace")
                raise LibraryError(f"Ollama refused to pull {model}: {_ollama_error(body)}")
            async for line in response.aiter_lines():
                if not line.strip():
                    continue
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if "error" in event:
                    raise LibraryError(f"Ollama could not pull {model}: {event['error']}")
                if on_progress is not None:
                    on_progress(str(event.get("status", "")), int(event.get("completed") or 0),
                                int(event.get("total") or 0))

    async def close(self) -> None:
        for job in self.jobs():
            job.pause()
        await self.unload()


def _ollama_error(body: str) -> str:
    with contextlib.suppress(ValueError, AttributeError):
        return str(json.loads(body).get("error") or body)[:300]
    return body[:300]


__all__ = [
    "BundledModel", "DownloadJob", "DownloadStopped", "HubFile", "HubRepo", "InstalledModel",
    "LibraryEndpoint",
    "LibraryError", "ModelLibrary", "ModelLibraryService", "PartialDownload", "Progress",
    "Recommendation", "choose_context", "machine_ram_bytes", "size_text",
]
