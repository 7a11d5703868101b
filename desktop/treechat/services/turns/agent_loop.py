"""The agent loop of one turn: reach the model, refuse what it cannot take (images to a
blind model), start the chat's tool servers, then run requests until a reply calls no tool
or the step limit is reached."""

from __future__ import annotations

import asyncio
import logging

from ...core.attachments import node_attachments
from ...core.model import Node
from ...providers.llm import supports_vision as llm_supports_vision
from ...store.database import Store
from ..models.catalog import Endpoint, ModelUnavailable
from .changes import ChangeLog
from .config import ChatConfig
from .endpoints import Endpoints, address
from .events import EventSink, TurnError, TurnFailed, TurnStarted
from .session_tools import SessionTools
from .sessions import SessionService
from .step import ReplyStep, StepDone
from .turn import Turn

log = logging.getLogger(__name__)


class AgentLoop:
    def __init__(
        self, store: Store, sessions: SessionService, endpoints: Endpoints,
        tools: SessionTools, step: ReplyStep, config: ChatConfig,
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.endpoints = endpoints
        self.tools = tools
        self.step = step
        self.config = config

    async def run(
        self,
        session_id: str,
        parent: str | None,
        user: Node | None,
        model: str | None,
        api_base: str | None,
        sink: EventSink,
        continuing: str | None = None,
    ) -> Node | None:
        """The reply to `parent` (`user` the message just committed, None for a retry);
        `continuing` names the cut-short reply the first request carries on."""
        changes = ChangeLog(session_id)
        if user is not None:
            changes.wrote(user)
        endpoint = await self._reach_model(session_id, parent, user, model, api_base, sink,
                                           changes)
        if endpoint is None:
            return None
        blind = await self._unseen_images(await self._message_of(parent, user), endpoint)
        if blind:
            # The message and its files are kept: retry it on a model that can see, or edit it.
            sink(TurnStarted(session_id, parent, user, address(endpoint)))
            sink(TurnFailed(session_id, TurnError("unavailable", blind, False,
                                                  action="settings"), None, changes.changes()))
            return None
        sink(TurnStarted(session_id, parent, user, address(endpoint)))
        await self.tools.prepare_servers(session_id, endpoint)
        turn = Turn(session_id, endpoint, self.tools.for_session(session_id, endpoint), sink,
                    changes)
        return await self._steps(turn, parent, continuing)

    async def _steps(self, turn: Turn, head: str | None, continuing: str | None) -> Node | None:
        for step in range(self.config.max_steps):
            outcome = await self.step.run(turn, head, continuing if step == 0 else None)
            if isinstance(outcome, StepDone):
                return outcome.node
            head = outcome.assistant.id
        turn.sink(
            TurnFailed(
                turn.session_id,
                TurnError(
                    "internal",
                    f"Stopped after {self.config.max_steps} tool steps.",
                    True,
                    action="retry",
                ),
                None,
                turn.changes(),
            )
        )
        return None

    async def _reach_model(
        self, session_id: str, parent: str | None, user: Node | None, model: str | None,
        api_base: str | None, sink: EventSink, changes: ChangeLog,
    ) -> Endpoint | None:
        """The endpoint the turn talks to (the session switched to it), or None once the
        failure to reach it is reported."""
        session = await self.store.run(lambda r: r.get_session(session_id))
        try:
            endpoint = await self.endpoints.for_turn(
                model, session.model if session else "", api_base)
        except ModelUnavailable as exc:
            error = TurnError("unavailable", str(exc), False, action="settings")
        except Exception as exc:  # the bundled model failed to start, a broken setting...
            log.exception("could not reach the model")
            error = TurnError("offline", f"Could not start or reach the model: {exc}", True,
                              action="retry")
        else:
            if session is not None and endpoint.choice and session.model != endpoint.choice:
                await self.sessions.set_model(session_id, endpoint.choice)
                changes.switched_model(endpoint.choice)
            return endpoint
        sink(TurnStarted(session_id, parent, user, model or ""))
        sink(TurnFailed(session_id, error, None, changes.changes()))
        return None

    async def _message_of(self, parent: str | None, user: Node | None) -> Node | None:
        """The user message the reply answers: the one just committed, or for a retry the
        message retried (what it carries is checked again)."""
        if user is not None or parent is None:
            return user
        replied = await self.store.run(lambda r: r.get_node(parent))
        return replied if replied is not None and replied.role == "user" else None

    async def _unseen_images(self, user: Node | None, endpoint: Endpoint) -> str:
        """Why `endpoint` cannot take the images `user` carries ("" when it can)."""
        if user is None:
            return ""
        images = [r.name for r in node_attachments(user.metadata)
                  if r.kind == "image" or r.page_images]
        if not images or await asyncio.to_thread(llm_supports_vision, endpoint.model):
            return ""
        return (f"{endpoint.label} cannot see images, and this message carries "
                f"{', '.join(images)}. Choose a model that accepts images and retry the "
                "message, or edit it without them.")
