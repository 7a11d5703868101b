"""Export chats as Markdown or Treechat JSON: one chat (HEAD's branch or every branch) or all
chats. The window's Export dialog and `treechat export` both call this.

JSON is Treechat's own format (`core.imports.treechat`), which `import_file` reads back into
the same graph, reasoning and every other node metadata included. Exporting every chat to JSON
writes a list of those documents, which imports as all of them.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ...core import dag
from ...core.attachments import node_attachments, safe_name
from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.dag import Graph
from ...core.imports.markdown import render_markdown
from ...core.imports.treechat import dump_session
from ...core.model import Annotation, Node, Session
from ...store.database import Store
from ...store.repository import Repository

ExportFormat = Literal["md", "json"]
ExportScope = Literal["branch", "all"]
FORMATS: tuple[ExportFormat, ...] = ("md", "json")
EXTENSIONS: dict[str, str] = {"md": ".md", "json": ".json"}
_SEPARATOR = "\n---\n\n"


@dataclass(frozen=True, slots=True)
class _Loaded:
    session: Session
    nodes: tuple[Node, ...]
    notes: tuple[Annotation, ...]
    # The attachment bytes its nodes name: (media type, bytes) by hash.
    files: dict[str, tuple[str, bytes]] = field(default_factory=dict)


def _check(fmt: str, scope: str | None) -> None:
    if fmt not in FORMATS:
        raise ValueError(f"unknown export format {fmt!r} (use json or md)")
    if scope is not None and scope not in ("branch", "all"):
        raise ValueError(f"unknown export scope {scope!r} (use branch or all)")


def _load(repo: Repository, session_id: str) -> _Loaded:
    session = repo.get_session(session_id)
    if session is None:
        raise LookupError(f"no session {session_id!r} (see `treechat sessions`)")
    nodes = repo.session_nodes(session_id)
    notes = repo.annotations([n.id for n in nodes]) if nodes else ()
    files: dict[str, tuple[str, bytes]] = {}
    for ref in (r for n in nodes for r in node_attachments(n.metadata)):
        if ref.sha256 not in files:
            data = repo.attachment_bytes(ref.sha256)
            if data is not None:
                files[ref.sha256] = (ref.media_type, data)
    return _Loaded(session, nodes, notes, files)


def _branch_nodes(loaded: _Loaded) -> tuple[Node, ...]:
    """The nodes of HEAD's branch: its ancestry and the tool runs hanging off it."""
    graph = Graph(loaded.nodes)
    head = loaded.session.head if loaded.session.head in graph else None
    if head is None:
        return ()
    keep = {n.id for n in dag.ancestry(graph, head)}
    keep |= {n.id for n in dag.active_path(graph, head)}
    return tuple(n for n in loaded.nodes if n.id in keep)


def _render(loaded: _Loaded, fmt: str, scope: ExportScope, now: float) -> str | dict[str, object]:
    if fmt == "json":
        nodes = loaded.nodes if scope == "all" else _branch_nodes(loaded)
        named = {r.sha256 for n in nodes for r in node_attachments(n.metadata)}
        return dump_session(loaded.session, nodes, exported_at=now,
                            files={k: v for k, v in loaded.files.items() if k in named})
    return render_markdown(
        loaded.session,
        Graph(loaded.nodes),
        all_branches=scope == "all",
        hidden=dag.hidden_set(loaded.notes),
    )


def _default_scope(fmt: str) -> ExportScope:
    # JSON keeps the whole graph unless asked otherwise: it is the backup format.
    return "all" if fmt == "json" else "branch"


async def export_session(
    store: Store,
    session_id: str,
    fmt: str = "json",
    all_branches: bool = False,
    *,
    scope: ExportScope | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """One chat as text. `scope` "branch" is HEAD's branch, "all" every branch; left out,
    Markdown is HEAD's branch (every branch when `all_branches`) and JSON the whole graph."""
    _check(fmt, scope)
    chosen: ExportScope = scope or ("all" if all_branches else _default_scope(fmt))
    loaded = await store.run(lambda r: _load(r, session_id))
    out = _render(loaded, fmt, chosen, clock.now())
    if isinstance(out, str):
        return out
    return json.dumps(out, ensure_ascii=False, indent=1) + "\n"


async def export_sessions(
    store: Store,
    fmt: str = "json",
    *,
    session_ids: Sequence[str] | None = None,
    scope: ExportScope | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> str:
    """Several chats (every visible one when `session_ids` is None), newest first: JSON as a
    list of Treechat documents, Markdown one after another."""
    _check(fmt, scope)
    chosen: ExportScope = scope or _default_scope(fmt)

    def load(repo: Repository) -> list[_Loaded]:
        ids = (
            [s.id for s in repo.list_sessions(include_hidden=False)]
            if session_ids is None
            else list(session_ids)
        )
        return [_load(repo, i) for i in ids]

    loaded = await store.run(load)
    now = clock.now()
    rendered = await asyncio.to_thread(lambda: [_render(x, fmt, chosen, now) for x in loaded])
    if fmt == "json":
        return json.dumps(rendered, ensure_ascii=False, indent=1) + "\n"
    return _SEPARATOR.join(str(r).rstrip("\n") + "\n" for r in rendered)


_UNSAFE = re.compile(r"[^\w\- ]+", re.UNICODE)


def suggested_filename(title: str, fmt: str) -> str:
    """A file name for an exported chat: its title made safe, with the format's extension."""
    stem = " ".join(_UNSAFE.sub(" ", title).split())[:80] or "chat"
    return stem + EXTENSIONS.get(fmt, ".txt")


async def write_export(path: Path, text: str) -> Path:
    """Write an export next to its final name first, then move it into place, so a failed
    write never leaves half a file where a good one was."""
    target = Path(path)

    def work() -> Path:
        partial = target.with_name(target.name + ".part")
        partial.write_text(text, encoding="utf-8")
        partial.replace(target)
        return target

    return await asyncio.to_thread(work)


def attachments_folder(markdown: Path) -> Path:
    """Where a Markdown export's attachments go: a folder beside it, named after it."""
    return markdown.with_name(markdown.stem + " files")


async def write_markdown_attachments(
    store: Store, markdown: Path, session_ids: Sequence[str], *, all_branches: bool = False
) -> tuple[Path, ...]:
    """Write the files the exported messages carry beside the `.md` (in
    `attachments_folder`), each under its shown name made safe, never a path from the chat;
    two files of one name get the start of their hash in front. Returns what was written."""

    def load(repo: Repository) -> list[_Loaded]:
        return [_load(repo, i) for i in session_ids]

    loaded = await store.run(load)

    def work() -> tuple[Path, ...]:
        folder = attachments_folder(Path(markdown))
        written: list[Path] = []
        used: set[str] = set()
        seen: set[str] = set()
        for item in loaded:
            nodes = item.nodes if all_branches else _branch_nodes(item)
            for ref in (r for n in nodes for r in node_attachments(n.metadata)):
                blob = item.files.get(ref.sha256)
                if blob is None or ref.sha256 in seen:  # the same file twice: written once
                    continue
                seen.add(ref.sha256)
                name = safe_name(ref.name)
                if name in used:
                    name = f"{ref.sha256[:8]}-{name}"
                used.add(name)
                folder.mkdir(parents=True, exist_ok=True)
                target = folder / name
                partial = target.with_name(target.name + ".part")
                partial.write_bytes(blob[1])
                partial.replace(target)
                written.append(target)
        return tuple(written)

    return await asyncio.to_thread(work)
