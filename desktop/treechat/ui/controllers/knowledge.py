"""Knowledge in the window: the panel of a chat or a project (what it searches, adding folders
and files, indexing with progress, re-indexing, removing), re-indexing when the files of the
open chat's knowledge change, and opening the file a reply's citation points at (in the
window's own viewer at the cited line; a PDF in the system's, at its page). Indexing runs
on worker threads through the knowledge service; the GUI thread only shows progress."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QFileSystemWatcher, QObject, Qt, QTimer, QUrl, Slot
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QWidget

from ...core.citations import SOURCE_SCHEME, parse_source_url
from ...services.projects import ProjectService
from ...services.turns.chat_service import ChatService
from ..knowledge.panel import BaseRow, KnowledgePanel
from ..knowledge.source_viewer import SourceViewer, cited_span
from .wiring import Spawner, StatusLine

if TYPE_CHECKING:
    from ...services.retrieval.knowledge import IndexProgress, KnowledgeService

log = logging.getLogger(__name__)

WATCH_LIMIT = 256  # folders watched for changes at most (the rest are read on re-index)
CHANGE_DELAY_MS = 1500  # a burst of saves is one re-index


@dataclass(frozen=True, slots=True)
class Target:
    """What a panel is for: a chat or a project."""

    kind: str  # "chat" or "project"
    id: str
    title: str


class KnowledgeController(QObject):
    def __init__(self, chat: ChatService, projects: ProjectService, *, window: QWidget,
                 status: StatusLine, tasks: Spawner) -> None:
        super().__init__(window)
        self._chat = chat
        self._projects = projects
        self._window = window
        self._status = status
        self._tasks = tasks
        self._service: KnowledgeService | None = None
        self.panels: dict[Target, KnowledgePanel] = {}
        self.indexing: dict[str, asyncio.Task[None]] = {}
        self._refining: dict[str, bool] = {}  # base -> run once more when this run ends
        self.opened: list[tuple[str, int, int]] = []  # citations opened: (file, page, line)
        self.viewers: dict[str, SourceViewer] = {}  # path -> its viewer, while open
        self._wanted: dict[str, int] = {}  # path -> the line its viewer is to show
        self._watched: dict[str, set[str]] = {}  # path -> bases
        self._changed: set[str] = set()
        self.watcher = QFileSystemWatcher(self)
        self.watcher.directoryChanged.connect(self._path_changed)
        self.watcher.fileChanged.connect(self._path_changed)
        self._change_timer = QTimer(self)
        self._change_timer.setSingleShot(True)
        self._change_timer.setInterval(CHANGE_DELAY_MS)
        self._change_timer.timeout.connect(self._reindex_changed)
        # a reply's citations are links of this scheme; opening one comes here (PySide takes
        # the slot's name as text, though its stubs say bytes)
        slot: Any = "open_source"
        QDesktopServices.setUrlHandler(SOURCE_SCHEME, self, slot)

    def close(self) -> None:
        QDesktopServices.unsetUrlHandler(SOURCE_SCHEME)
        for task in self.indexing.values():
            task.cancel()

    async def service(self) -> KnowledgeService:
        # off the GUI thread: its modules (numpy, usearch) load on first use, and a change
        # of search model makes a new one
        self._service = await asyncio.to_thread(self._chat.knowledge)
        return self._service

    # --- the panel -----------------------------------------------------------------------

    def open_panel(self, target: Target) -> KnowledgePanel:
        panel = self.panels.get(target)
        if panel is None:
            panel = KnowledgePanel(self._window, target.title, target.kind)
            panel.addRequested.connect(lambda paths, t=target: self.add(t, paths))
            panel.reindexRequested.connect(self.reindex)
            panel.removeRequested.connect(lambda name, t=target: self.remove(t, name))
            self.panels[target] = panel
        panel.show()
        panel.raise_()
        self._tasks.spawn(self.refresh(target), name="knowledge-panel")
        return panel

    async def rows(self, target: Target) -> list[BaseRow]:
        service = await self.service()
        bases, stats = await service.bases(), await service.stats()
        own, inherited = await self._names(target)
        out = []
        for name, origin in [*((n, "") for n in own), *inherited]:
            if name not in bases:
                continue
            files, passages = stats.get(name, (0, 0))
            state = ("indexing…" if name in self.indexing
                     else "indexed" if files else "not indexed yet")
            out.append(BaseRow(name, tuple(bases[name]), files, passages, state, origin))
        return out

    async def refresh(self, target: Target) -> None:
        rows = await self.rows(target)
        panel = self.panels.get(target)
        if panel is not None:
            panel.set_bases(rows)
        await self._watch(rows)

    async def _names(self, target: Target) -> tuple[list[str], list[tuple[str, str]]]:
        """(the target's own bases, those it has from its project with the project's name)."""
        if target.kind == "project":
            found = await self._projects.find(target.id)
            return list(found.knowledge), []
        own = await (await self.service()).for_session(target.id)
        project = await self._projects.project_of(target.id)
        inherited = [(n, project.name) for n in project.knowledge] if project else []
        return own, inherited

    # --- adding, indexing, removing ------------------------------------------------------

    def add(self, target: Target, paths: list[str]) -> None:
        self._tasks.spawn(self.add_paths(target, paths), name="knowledge-add")

    async def add_paths(self, target: Target, paths: list[str]) -> None:
        from ...services.retrieval.knowledge import KnowledgeError

        service = await self.service()
        own, _ = await self._names(target)
        bases = await service.bases()
        name = own[0] if own else _free_name(target.title, bases)
        try:
            await service.add(name, paths)
        except KnowledgeError as exc:
            self._say(target, f"Not added: {exc}")
            return
        if name not in own:
            if target.kind == "project":
                project = await self._projects.find(target.id)
                await self._projects.update(target.id, knowledge=(*project.knowledge, name))
            else:
                await service.use_in_session(target.id, [*own, name])
        await self.refresh(target)
        await self.index(name)

    def reindex(self, name: str) -> None:
        self._tasks.spawn(self.index(name), name="knowledge-reindex")

    async def index(self, name: str) -> None:
        """Bring one base up to date, its panels showing the progress; one run per base."""
        running = self.indexing.get(name)
        if running is not None:
            await asyncio.shield(running)
            return
        task = asyncio.ensure_future(self._index(name))
        self.indexing[name] = task
        try:
            await asyncio.shield(task)
        finally:
            if self.indexing.get(name) is task and task.done():
                del self.indexing[name]

    async def _index(self, name: str) -> None:
        service = await self.service()

        def progress(p: IndexProgress) -> None:
            for panel in self.panels.values():
                if name in {r.name for r in panel.rows}:
                    panel.set_progress(name, p.done, p.total, p.files_per_s, p.seconds_left)

        report = await service.reindex(name, progress)
        skipped = f"; {len(report.skipped)} could not be read" if report.skipped else ""
        text = (f"“{name}”: {report.files:,} file{'s' if report.files != 1 else ''}, "
                f"{report.read:,} read, {report.removed:,} gone, in {report.seconds:.1f} s"
                f"{skipped}")
        for line in report.skipped:
            log.info("knowledge %s: skipped %s", name, line)
        del self.indexing[name]
        for t in list(self.panels):
            panel = self.panels[t]
            if name in {r.name for r in panel.rows}:
                panel.say(text)
                await self.refresh(t)
        self._status(f"Knowledge {text}")
        # the finer reading of meaning follows in the background, at a gentle pace; a search
        # before it ends judges its likeliest candidates by it on the spot
        self._tasks.spawn(self._refine(name), name="knowledge-refine")

    async def _refine(self, name: str) -> None:
        """One background reading per base: passages indexed while it runs are read by one
        more run after it, not by a second run beside it."""
        if name in self._refining:
            self._refining[name] = True
            return
        self._refining[name] = False
        service = await self.service()
        try:
            again = True
            while again:
                done = await service.refine([name], pause=1.0)
                log.info("knowledge %s: %d passage(s) read for meaning", name, done)
                again, self._refining[name] = self._refining[name], False
        finally:
            del self._refining[name]

    def remove(self, target: Target, name: str) -> None:
        self._tasks.spawn(self.detach(target, name), name="knowledge-remove")

    async def detach(self, target: Target, name: str) -> None:
        """The target stops searching the base; a base nothing else uses is removed (its
        passages go; the files are untouched)."""
        service = await self.service()
        if target.kind == "project":
            project = await self._projects.find(target.id)
            await self._projects.update(
                target.id, knowledge=tuple(n for n in project.knowledge if n != name))
        else:
            own = await service.for_session(target.id)
            await service.use_in_session(target.id, [n for n in own if n != name])
        users = await service.sessions_using(name)
        in_projects = [p for p in (await self._projects.all()).projects if name in p.knowledge]
        if not users and not in_projects:
            await service.remove(name)
        self._say(target, f"“{name}” removed; its files are untouched.")
        await self.refresh(target)

    def _say(self, target: Target, text: str) -> None:
        panel = self.panels.get(target)
        if panel is not None:
            panel.say(text)
        self._status(text)

    # --- following the files -------------------------------------------------------------

    def chat_opened(self, session_id: str, title: str) -> None:
        """The open chat's knowledge is brought up to date (files changed while the window
        was closed) and watched from now on."""
        target = Target("chat", session_id, title)

        async def work() -> None:
            rows = await self.rows(target)
            await self._watch(rows)
            for row in rows:
                if row.name not in self.indexing:
                    await self.index(row.name)

        self._tasks.spawn(work(), name="knowledge-follow")

    async def _watch(self, rows: list[BaseRow]) -> None:
        def folders() -> list[tuple[str, str]]:  # a walk of the folders: off the GUI thread
            return [(row.name, str(f)) for row in rows for raw in row.paths
                    for f in _folders(Path(raw))]

        for name, key in await asyncio.to_thread(folders):
            if key not in self._watched:
                if len(self._watched) >= WATCH_LIMIT:
                    continue
                self.watcher.addPath(key)
            self._watched.setdefault(key, set()).add(name)

    def _path_changed(self, path: str) -> None:
        self._changed |= self._watched.get(path, set())
        self._change_timer.start()

    def _reindex_changed(self) -> None:
        changed, self._changed = self._changed, set()
        for name in sorted(changed):
            self.reindex(name)

    # --- citations -----------------------------------------------------------------------

    @Slot(QUrl)
    def open_source(self, url: QUrl) -> None:
        """Open the file a citation names: a PDF in the system's viewer at its page, any
        other file in the window's own viewer at the cited line, the passage highlighted. A
        link that is not a citation of an existing file opens nothing."""
        place = parse_source_url(url.toString(QUrl.ComponentFormattingOption.FullyEncoded))
        if place is None:
            return
        path, page, line = place
        if not Path(path).is_absolute():  # a passage as the model saw it: from a folder added
            self._tasks.spawn(self._open_shown(path, page, line), name="knowledge-locate")
            return
        self._open_file(path, page, line)

    async def _open_shown(self, shown: str, page: int, line: int) -> None:
        path = await (await self.service()).locate(shown)
        if path is None:
            self._status(f"{shown} is not in this chat's knowledge any more")
            return
        self._open_file(path, page, line)

    def _open_file(self, path: str, page: int, line: int) -> None:
        if not Path(path).is_file():
            self._status(f"{path} is not there any more")
            return
        self.opened.append((path, page, line))
        if path.lower().endswith(".pdf"):
            target = QUrl.fromLocalFile(path)
            if page:
                target.setFragment(f"page={page}")  # PDF viewers open the page it names
            self._open_elsewhere(target, f" at page {page}" if page else "")
            return
        viewer = self.viewers.get(path)
        if viewer is None:
            viewer = SourceViewer(path, self._window)
            viewer.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose, True)
            viewer.openElsewhereRequested.connect(
                lambda p: self._open_elsewhere(QUrl.fromLocalFile(p), ""))
            viewer.destroyed.connect(lambda *_, p=path: self.viewers.pop(p, None))
            self.viewers[path] = viewer
        viewer.show()
        viewer.raise_()
        viewer.activateWindow()
        self._wanted[path] = line
        self._tasks.spawn(self._fill(viewer, path, line), name="knowledge-source")

    async def _fill(self, viewer: SourceViewer, path: str, line: int) -> None:
        def read() -> tuple[str, tuple[int, int]]:  # a large file is read off the GUI thread
            text = read_source(Path(path))
            return text, cited_span(text, line)

        try:
            text, span = await asyncio.to_thread(read)
        except (OSError, ValueError) as exc:
            with contextlib.suppress(RuntimeError):  # the viewer closed meanwhile
                viewer.show_problem(f"{Path(path).name} cannot be shown here: {exc}")
            return
        if self._wanted.get(path) != line:
            return  # a later citation of the same file was clicked meanwhile: it shows
        with contextlib.suppress(RuntimeError):
            viewer.show_text(text, span)
            where = f"line {span[0]}" if span[0] == span[1] else f"lines {span[0]}–{span[1]}"
            self._status(f"{Path(path).name}, {where}")

    def _open_elsewhere(self, target: QUrl, where: str) -> None:
        name = Path(target.toLocalFile()).name

        def open_file() -> None:
            if QDesktopServices.openUrl(target):
                self._status(f"Opened {name}{where}")
            else:
                self._status(f"No application opens {name}; it is at {target.toLocalFile()}")

        # after this handler returns: Qt asks no handler of the user's for a link opened
        # from inside one, only the system
        QTimer.singleShot(0, open_file)


def read_source(path: Path) -> str:
    """A knowledge file's text as the index read it, so its line numbers are the ones cited:
    UTF-8 (else Latin-1), HTML without its markup."""
    from ...services.retrieval.extract import HTML_SUFFIXES, MAX_FILE_BYTES, html_text

    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"it is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    data = path.read_bytes()
    if b"\x00" in data[:8192]:
        raise ValueError("it is not a text file")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    return html_text(text) if path.suffix.lower() in HTML_SUFFIXES else text


def _free_name(title: str, bases: Mapping[str, object]) -> str:
    """A new base's name: the chat's or project's title, numbered if already taken."""
    base = " ".join(title.split()) or "Knowledge"
    name, n = base, 2
    while name in bases:
        name, n = f"{base} ({n})", n + 1
    return name


def _folders(path: Path) -> list[Path]:
    """A folder and the folders under it (a file: itself), hidden and tool folders left out."""
    if path.is_file():
        return [path]
    out = [path]
    try:
        for sub in sorted(path.rglob("*")):
            if len(out) >= WATCH_LIMIT:
                break
            if sub.is_dir() and not any(part.startswith(".") or part in (
                    "node_modules", "__pycache__") for part in sub.relative_to(path).parts):
                out.append(sub)
    except OSError:
        pass
    return out
