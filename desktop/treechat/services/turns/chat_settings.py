"""A chat's own instructions and parameters (kept as revisions with their time), the global
instructions under them, presets (shipped and the user's own), and pinned / favourite chats.

The chat header, the Settings dialog, the presets menu and the session list call this; the
chat service reads the current revision before every request, so a change applies from the
next request on and the reply records the revision it ran under.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ... import paths
from ...core.chat_settings import (
    ChatParameters,
    Preset,
    SessionSettings,
    SettingsError,
    check_instructions,
    dump_presets,
    join_instructions,
    load_presets,
    preset_from_dict,
)
from ...core.clock import SYSTEM_CLOCK, Clock
from ...core.model import Session
from ...store import chat_settings as table
from ...store.chat_settings import SessionMarks
from ...store.database import Store
from ...store.projects import project_of
from ...store.repository import Repository
from .sessions import SessionService, new_id

__all__ = [
    "ChatSettingsService",
    "Preset",
    "SessionMarks",
    "SessionSettings",
    "SettingsError",
    "builtin_presets",
]

log = logging.getLogger(__name__)

SETTINGS_GLOBAL_INSTRUCTIONS = "global_instructions"
"""Settings key of the instructions every chat starts from (bootstrap reads the same key)."""

def builtin_presets(folder: Path | None = None) -> tuple[Preset, ...]:
    """The presets shipped under `resources/presets/` (one JSON object per file), by name. A
    broken file is logged and skipped: it must not take the menu down."""
    where = folder if folder is not None else paths.resource("presets")
    out: list[Preset] = []
    if not where.is_dir():
        return ()
    for file in sorted(where.glob("*.json")):
        try:
            out.append(preset_from_dict(json.loads(file.read_text("utf-8")), builtin=True))
        except (OSError, ValueError) as exc:
            log.warning("shipped preset %s is unusable: %s", file.name, exc)
    return tuple(sorted(out, key=lambda p: p.name.lower()))


@dataclass(frozen=True, slots=True)
class ListedSession:
    """A session as the list shows it: pinned ones first, favourites marked."""

    session: Session
    pinned: bool = False
    favourite: bool = False


class ChatSettingsService:
    """Reads and writes a chat's settings revisions, the global instructions, presets and
    list marks on the store's worker."""

    def __init__(
        self,
        store: Store,
        *,
        clock: Clock = SYSTEM_CLOCK,
        make_id: Callable[[], str] = new_id,
        presets_folder: Path | None = None,
        on_global_instructions: Callable[[str], None] | None = None,
    ) -> None:
        self.store = store
        self.clock = clock
        self.make_id = make_id
        self.presets_folder = presets_folder
        self._on_global = on_global_instructions
        self._builtin: tuple[Preset, ...] | None = None

    # --- a chat's instructions and parameters ----------------------------------------------

    async def current(self, session_id: str) -> SessionSettings:
        """What the chat's next request runs under (revision 0: nothing set yet)."""
        return await self.store.run(lambda r: table.current_settings(r, session_id))

    async def in_effect(self, session_id: str) -> SessionSettings:
        """What a request runs under: the chat's current revision with its project's
        instructions before its own (a chat outside any project: its revision as it is)."""

        def read(repo: Repository) -> SessionSettings:
            current = table.current_settings(repo, session_id)
            project = project_of(repo, session_id)
            if project is None or not project.instructions.strip():
                return current
            return replace(current, instructions=join_instructions(project.instructions,
                                                                   current.instructions))

        return await self.store.run(read)

    async def history(self, session_id: str) -> tuple[SessionSettings, ...]:
        """Every change to the chat's settings, oldest first, each with its time."""
        return await self.store.run(lambda r: table.settings_history(r, session_id))

    async def revision(self, revision_id: str) -> SessionSettings | None:
        """One revision by id (a reply's metadata names the one it ran under)."""
        return await self.store.run(lambda r: table.settings_by_id(r, revision_id))

    async def update(
        self,
        session_id: str,
        *,
        instructions: str | None = None,
        parameters: ChatParameters | None = None,
        preset: str | None = None,
        **changes: Any,
    ) -> SessionSettings:
        """Record a new revision. `instructions`/`parameters`/`preset` replace those parts;
        keyword `changes` (temperature=, top_p=, max_tokens=, reasoning_effort=,
        thinking_budget=) change single parameters, None clearing one. The instructions are
        L0: a change rewrites the cached prefix from the next request on. Raises
        `SettingsError` for a bad value, writing nothing."""
        if instructions is not None:
            check_instructions(instructions)
        now = self.clock.now()
        revision_id = self.make_id()

        def work(repo: Any) -> SessionSettings:
            if repo.get_session(session_id) is None:
                raise LookupError(f"no session {session_id!r}")
            current = table.current_settings(repo, session_id)
            params = parameters if parameters is not None else current.parameters
            if changes:
                try:
                    params = params.updated(**changes)
                except TypeError as exc:
                    raise SettingsError(str(exc)) from None
            return table.add_settings_revision(
                repo,
                revision_id=revision_id,
                session_id=session_id,
                changed_at=now,
                instructions=current.instructions if instructions is None else instructions,
                parameters=params,
                preset=current.preset if preset is None else preset,
            )

        return await self.store.run(work)

    async def instructions_for(self, session_id: str, node_id: str) -> SessionSettings:
        """The revision a reply ran under: the one its metadata names, else the latest one
        changed before the reply was written."""

        def work(repo: Any) -> SessionSettings:
            node = repo.get_node(node_id)
            if node is None:
                raise LookupError(f"no node {node_id!r}")
            named = node.metadata.get("settings_revision")
            if isinstance(named, str):
                found = table.settings_by_id(repo, named)
                if found is not None:
                    return found
            earlier = [
                s for s in table.settings_history(repo, session_id)
                if s.changed_at <= node.created_at
            ]
            return earlier[-1] if earlier else SessionSettings(session_id=session_id)

        return await self.store.run(work)

    # --- the global instructions -----------------------------------------------------------

    async def global_instructions(self) -> str:
        value = await self.store.run(lambda r: r.get_setting(SETTINGS_GLOBAL_INSTRUCTIONS, ""))
        return str(value or "")

    async def set_global_instructions(self, text: str) -> None:
        """The instructions every chat runs under, before its own (L0 for every chat)."""
        check_instructions(text)
        await self.store.run(lambda r: r.set_setting(SETTINGS_GLOBAL_INSTRUCTIONS, text))
        if self._on_global is not None:
            self._on_global(text)

    # --- presets ---------------------------------------------------------------------------

    def builtin(self) -> tuple[Preset, ...]:
        if self._builtin is None:
            self._builtin = builtin_presets(self.presets_folder)
        return self._builtin

    async def presets(self) -> tuple[Preset, ...]:
        """Shipped presets and the user's own, by name; a user preset of the same name as a
        shipped one takes its place."""
        builtin = await asyncio.to_thread(self.builtin)
        mine = await self.store.run(table.user_presets)
        names = {p.name for p in mine}
        merged = [p for p in builtin if p.name not in names] + list(mine)
        return tuple(sorted(merged, key=lambda p: p.name.lower()))

    async def preset(self, name: str) -> Preset:
        for p in await self.presets():
            if p.name == name:
                return p
        for p in await self.presets():
            if p.name.lower() == name.lower():
                return p
        raise LookupError(f"no preset named {name!r} (see `treechat presets list`)")

    async def save_preset(self, preset: Preset) -> Preset:
        now = self.clock.now()
        await self.store.run(lambda r: table.save_preset(r, preset, now))
        return preset

    async def delete_preset(self, name: str) -> bool:
        """Remove a user preset; a shipped one of that name shows again."""
        return await self.store.run(lambda r: table.delete_preset(r, name))

    async def export_presets(self, names: Sequence[str] = ()) -> str:
        """The presets named (all when none are) as an export file's text."""
        chosen = await self.presets()
        if names:
            chosen = tuple([await self.preset(n) for n in names])
        return dump_presets(chosen)

    async def import_presets(self, text: str | bytes) -> tuple[Preset, ...]:
        """Save every preset in an export file as the user's own (same name: replaced).
        Nothing is saved when any of them is invalid (`SettingsError`)."""
        presets = load_presets(text)
        now = self.clock.now()

        def work(repo: Any) -> None:
            with repo.transaction():
                for p in presets:
                    table.save_preset(repo, p, now)

        await self.store.run(work)
        return presets

    async def new_chat_from_preset(
        self, name: str | Preset, sessions: SessionService, *, title: str = "New chat"
    ) -> tuple[Session, SessionSettings]:
        """A new chat with the preset's model, instructions and parameters (revision 1 names
        the preset)."""
        preset = name if isinstance(name, Preset) else await self.preset(name)
        session = await sessions.create(title=title, model=preset.model)
        settings = await self.update(
            session.id,
            instructions=preset.system_prompt,
            parameters=preset.parameters,
            preset=preset.name,
        )
        return session, settings

    # --- pinned and favourite chats --------------------------------------------------------

    async def marks(self) -> dict[str, SessionMarks]:
        return await self.store.run(table.session_marks)

    async def set_pinned(self, session_id: str, pinned: bool) -> SessionMarks:
        now = self.clock.now()
        return await self.store.run(
            lambda r: table.set_session_mark(r, session_id, now=now, pinned=pinned)
        )

    async def set_favourite(self, session_id: str, favourite: bool) -> SessionMarks:
        now = self.clock.now()
        return await self.store.run(
            lambda r: table.set_session_mark(r, session_id, now=now, favourite=favourite)
        )

    async def listed(
        self, *, favourites_only: bool = False, include_hidden: bool = False
    ) -> tuple[ListedSession, ...]:
        """Sessions for the list: pinned first (newest first within each group), each with
        its marks; only favourites when `favourites_only`."""

        def work(repo: Any) -> tuple[tuple[Session, ...], dict[str, SessionMarks]]:
            return repo.list_sessions(include_hidden), table.session_marks(repo)

        sessions, marks = await self.store.run(work)
        rows = [
            ListedSession(
                s, marks.get(s.id, SessionMarks(s.id)).pinned,
                marks.get(s.id, SessionMarks(s.id)).favourite,
            )
            for s in sessions
        ]
        if favourites_only:
            rows = [r for r in rows if r.favourite]
        # list_sessions is newest first; a stable sort keeps that within each group.
        rows.sort(key=lambda r: not r.pinned)
        return tuple(rows)
