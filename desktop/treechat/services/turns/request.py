"""What a request carries besides the history: the system prompt's layers (identity, the
global and the chat's instructions, the workspace's AGENTS.md), the chat's parameters as
completion arguments, and the provider request built from a prepared context."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...core.chat_settings import SessionSettings, join_instructions
from ...core.citations import PASSAGES_KEY, TAIL_HEADING, Passage, passages_in
from ...core.reply import CONTINUES_KEY
from ...providers import stream as provider_stream
from ...tools.workspace import WorkspaceInstructions
from ..context import TurnPrep
from ..models.catalog import Endpoint
from .chat_settings import ChatSettingsService
from .config import ChatConfig

IDENTITY = (
    "You are Treechat's assistant: accurate, direct and friendly. Answer in Markdown. "
    "When you use tools, say briefly what you found."
)

CONTINUE_PROMPT = (
    "Your previous reply was cut off. Continue it from exactly where it stopped, without "
    "repeating anything or commenting on the interruption."
)
"""Sent after a cut-short reply to have it carried on (the request only: the graph keeps the
partial reply and its continuation as two nodes)."""


@dataclass(frozen=True, slots=True)
class BuiltRequest:
    """The provider request, and what the reply's metadata records of how it was asked
    (the settings revision, the reply it continues, the parameters sent)."""

    request: provider_stream.TurnRequest
    run_meta: dict[str, Any]


class RequestBuilder:
    """Builds the system prompt and the request; reads the config on every call, so a
    changed workspace or instruction applies from the next request on."""

    def __init__(self, config: ChatConfig, settings: ChatSettingsService) -> None:
        self.config = config
        self.settings = settings
        self._instructions: WorkspaceInstructions | None = None

    def system_prompt(self, chat_instructions: str = "") -> str:
        """L0: identity, the global instructions, then the chat's own."""
        return join_instructions(IDENTITY, self.config.global_instructions, chat_instructions)

    async def session_prompt(self, session_id: str) -> str:
        return self.system_prompt((await self.settings.in_effect(session_id)).instructions)

    def situation(self) -> str:
        """L1: the workspace and the instructions its AGENTS.md gives ("" without one)."""
        folder = self.config.workspace
        if folder is None:
            return ""
        where = Path(folder).expanduser()
        if self._instructions is None or self._instructions.path.parent != where:
            self._instructions = WorkspaceInstructions(where)
        found = self._instructions.read()
        if not found.present:
            return ""
        return f"Workspace: {folder}\n\nInstructions from AGENTS.md:\n{found.text}"

    async def parameters(self, model: str, settings: SessionSettings) -> dict[str, Any]:
        """The chat's parameters as completion arguments, only those `model` takes
        (`max_tokens` included when set)."""
        params = settings.parameters
        if not params.as_dict():
            return {}
        from ...providers import llm

        out = await asyncio.to_thread(
            functools.partial(
                llm.request_parameters,
                model,
                temperature=params.temperature,
                top_p=params.top_p,
                reasoning_effort=params.reasoning_effort,
                thinking_budget=params.thinking_budget,
            )
        )
        if params.max_tokens is not None:
            caps = await asyncio.to_thread(llm.model_capabilities, model)
            if caps.max_tokens:
                out["max_tokens"] = params.max_tokens
        return out

    def build(
        self, session_id: str, endpoint: Endpoint, prep: TurnPrep, settings: SessionSettings,
        sent_params: dict[str, Any], continuing: str | None,
    ) -> BuiltRequest:
        """The chat request for `prep` with the parameters `parameters` gave; `continuing`
        names the cut-short reply this request carries on."""
        params = dict(sent_params)
        messages = prep.messages
        if continuing is not None:
            messages = (*messages, {"role": "user", "content": CONTINUE_PROMPT})
        max_tokens = params.pop("max_tokens", None)
        request = provider_stream.TurnRequest(
            model=endpoint.model,
            messages=messages,
            tools=prep.tools,
            api_base=endpoint.api_base,
            api_key=endpoint.api_key,
            max_tokens=(max_tokens or endpoint.reply_cap or prep.max_output_tokens
                        or endpoint.max_output),
            session_id=session_id,
            phase="chat",
            lineage=session_id,
            extra=params,
            headers=dict(endpoint.headers),
            connect_timeout=endpoint.timeout,
        )
        run_meta: dict[str, Any] = {}
        if settings.revision:
            run_meta["settings_revision"] = settings.id
        if continuing is not None:
            run_meta[CONTINUES_KEY] = continuing
        if params or max_tokens is not None:
            run_meta["parameters"] = {
                **params, **({"max_tokens": max_tokens} if max_tokens is not None else {})
            }
        quoted = tail_passages(prep.messages)
        if quoted:  # the knowledge the tail quoted, kept with the reply it was asked for
            run_meta[PASSAGES_KEY] = [p.as_dict() for p in quoted]
        return BuiltRequest(request, run_meta)


def tail_passages(messages: Sequence[Mapping[str, Any]]) -> list[Passage]:
    """The knowledge passages the volatile tail of a request quotes (none without any)."""
    if not messages:
        return []
    content = messages[-1].get("content")
    if messages[-1].get("role") != "user" or not isinstance(content, str):
        return []
    at = content.find(TAIL_HEADING)
    return passages_in(content[at + len(TAIL_HEADING):]) if at >= 0 else []
