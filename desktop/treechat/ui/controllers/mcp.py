"""MCP in the window: the approval prompt every tool call waits on (the window is the
service's approver while it is open), and Settings → Tools."""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMenu, QWidget

from ...services.mcp.approval import ApprovalRequest, Decision
from ...services.mcp.service import McpService
from ..common.announce import announce
from ..composer.composer import Composer
from ..sessions.list import SessionList
from .ports import OpenChat, Spawner, StatusLine

if TYPE_CHECKING:
    from ..dialogs.tool_approval import ToolApprovalDialog

log = logging.getLogger(__name__)


class McpController:
    def __init__(
        self,
        mcp: McpService | None,
        *,
        chat: OpenChat,
        tasks: Spawner,
        status: StatusLine,
        composer: Composer,
        session_list: SessionList,
        window: QWidget,
    ) -> None:
        self._mcp = mcp
        self._open = chat
        self._tasks = tasks
        self._status = status
        self._composer = composer
        self._list = session_list
        self._window = window
        self.pending: list[ToolApprovalDialog] = []  # prompts on screen, oldest first
        if mcp is not None:
            mcp.set_approver(self.ask)
            session_list.menuRequested.connect(self._session_menu)
            composer.promptRequested.connect(self.expand_prompt)

    # --- per chat ------------------------------------------------------------------

    def chat_opened(self, view: object) -> None:
        """A chat was opened: its servers are started for it."""
        mcp = self._mcp
        session = getattr(view, "session", None)
        if mcp is not None and session is not None:
            self._tasks.spawn(mcp.load_chat(session.id), name="mcp-chat")

    def _session_menu(self, session_id: str, menu: object) -> None:
        """The chat list's menu: a submenu turning each MCP server on or off in this chat."""
        mcp = self._mcp
        if mcp is None or not isinstance(menu, QMenu) or not mcp.configs():
            return
        on = {c.name for c in mcp.enabled_in(session_id)}
        sub = menu.addMenu("Tools in this chat")
        for config in mcp.configs():
            action = sub.addAction(config.name)
            action.setCheckable(True)
            action.setChecked(config.name in on)
            action.toggled.connect(
                lambda checked, name=config.name: self._tasks.spawn(
                    mcp.set_enabled_in_chat(session_id, name, checked), name="mcp-chat"))

    # --- prompts and resources in the composer --------------------------------------

    def expand_prompt(self, command: str, rest: str) -> None:
        """`/server:prompt key=value …` typed in the composer: the prompt's text replaces
        it, for the user to read and send."""
        sid = self._open.current_session_id
        if sid is None:
            self._status("Open a chat first: MCP prompts belong to a chat's servers")
            return
        self._tasks.spawn(self._expand(sid, command, rest), name="mcp-prompt")

    async def _expand(self, session_id: str, command: str, rest: str) -> None:
        mcp = self._mcp
        if mcp is None:
            return
        try:
            arguments = prompt_arguments(rest)
            text = await mcp.expand_prompt(session_id, command, arguments)
        except (LookupError, ValueError) as exc:
            message = exc.args[0] if exc.args else str(exc)
            self._status(f"{command}: {message}")
            return
        if self._open.current_session_id == session_id:
            self._composer.set_text(text)
            self._status(f"{command} filled the message box; edit it or press Enter")

    async def insert_resource(self, session_id: str, server: str, uri: str) -> None:
        """A server's resource added to the message being written, named and fenced."""
        mcp = self._mcp
        if mcp is None:
            return
        try:
            resource = await mcp.read_resource(server, uri)
        except Exception as exc:  # a server's failure is its own words, never a crash
            self._status(f"Could not read {uri} from {server}: {exc}")
            return
        if self._open.current_session_id != session_id:
            return
        composer = self._composer
        current = composer.text().rstrip()
        block = resource.as_message_block()
        composer.set_text(f"{current}\n\n{block}" if current else block)

    def resource_menu(self, menu: QMenu) -> None:
        """Fill `menu` with the open chat's MCP resources (each inserts itself)."""
        mcp = self._mcp
        sid = self._open.current_session_id
        menu.clear()
        if mcp is None or sid is None:
            menu.addAction("No chat open").setEnabled(False)
            return
        listed = [(c.name, r) for c in mcp.enabled_in(sid) for r in mcp.state(c.name).resources]
        if not listed:
            menu.addAction("No resources from this chat's servers").setEnabled(False)
            return
        for server, resource in listed:
            action = menu.addAction(f"{server}: {resource.name}")
            action.triggered.connect(
                lambda *_, s=server, u=resource.uri: self._tasks.spawn(
                    self.insert_resource(sid, s, u), name="mcp-resource"))

    def close(self) -> None:
        """The window goes: from now on "ask" means deny."""
        mcp = self._mcp
        if mcp is not None:
            mcp.set_approver(None)
        for dialog in list(self.pending):
            dialog.dismiss()

    def _chat_title(self, session_id: str) -> str:
        session = self._list.session(session_id)
        if session is None and self._open.current_view is not None \
                and self._open.current_view.session.id == session_id:
            session = self._open.current_view.session
        return session.title if session is not None else ""

    async def ask(self, request: ApprovalRequest) -> Decision:
        """Show the prompt and wait for its answer without blocking the window; a stopped
        turn cancels this coroutine, which closes the prompt unanswered."""
        from ..dialogs.tool_approval import ToolApprovalDialog

        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        dialog = ToolApprovalDialog(request, self._chat_title(request.session_id),
                                    parent=self._window,
                                    typing_target=lambda: self._composer.input)

        def decided(decision: object) -> None:
            if not future.done() and isinstance(decision, Decision):
                future.set_result(decision)

        dialog.decided.connect(decided)
        self.pending.append(dialog)
        dialog.show()  # not modal, not activated: Stop and the message box stay in reach
        dialog.raise_()
        if self._open.current_session_id == request.session_id:
            self._status(f"{_shown(request)} waits for your answer: allow it or deny it")
        # the prompt does not take the focus: a screen reader says it is there
        announce(dialog, f"The model asks to run {request.tool} from {request.server}. "
                         "The approval window waits for your answer.")
        try:
            decision = await future
            log.info("%s/%s: %s", request.server, request.tool, decision.value)
            if self._open.current_session_id == request.session_id:
                self._status(f"Running {_shown(request)}…" if decision is not Decision.DENY
                             else f"{_shown(request)} was denied")
            return decision
        finally:
            if dialog in self.pending:
                self.pending.remove(dialog)
            if not dialog.answered:
                dialog.dismiss()
            dialog.deleteLater()


def _shown(request: ApprovalRequest) -> str:
    """The tool as the approval prompt names it: its own name and its server's."""
    return f"{request.tool} ({request.server})"


def prompt_arguments(rest: str) -> dict[str, str]:
    """`key=value key2="two words"` after a prompt command, as its arguments."""
    import shlex

    out: dict[str, str] = {}
    for word in shlex.split(rest):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ValueError(f"arguments are key=value, not {word!r}")
        out[key] = value
    return out
