"""What the next request would carry and cost, asked before anything is sent: the context
record (occupancy) of a head, whether a message fits the window, the cost of the next
request, and what a model takes (parameters, images)."""

from __future__ import annotations

import asyncio
from typing import Any

from ...core.clock import Clock
from ...core.occupancy import Occupancy
from ...providers.llm import supports_vision as llm_supports_vision
from ...store import usage as ledger
from ...store.database import Store
from ..context import ContextEngine
from ..models.catalog import Endpoint
from .chat_settings import ChatSettingsService
from .endpoints import Endpoints, address
from .message_fit import MessageFit, cut_to_fit, measure_fit
from .request import RequestBuilder
from .session_tools import SessionTools
from .sessions import SessionService, SessionView
from .turn_records import CostEstimate, measured_from


class Estimates:
    def __init__(
        self, store: Store, engine: ContextEngine, endpoints: Endpoints,
        sessions: SessionService, settings: ChatSettingsService, requests: RequestBuilder,
        tools: SessionTools, clock: Clock,
    ) -> None:
        self.store = store
        self.engine = engine
        self.endpoints = endpoints
        self.sessions = sessions
        self.settings = settings
        self.requests = requests
        self.tools = tools
        self.clock = clock

    async def occupancy(
        self, session_id: str, *, model: str | None = None, api_base: str | None = None,
        view: SessionView | None = None,
    ) -> Occupancy:
        """What the next request would carry; `view` is the session as the caller shows it
        (read from the store when not given)."""
        if view is None or view.session.id != session_id:
            view = await self.sessions.view(session_id)
        endpoint = await self.endpoints.for_estimate(model or view.session.model or None,
                                                     api_base)
        await self.tools.load_chat(session_id)
        return await self._occupancy_of(session_id, endpoint, view.head)

    async def occupancy_after(self, session_id: str, endpoint: Endpoint, head: str) -> Occupancy:
        """The record of `head` once a request on `endpoint` has moved it there."""
        return await self._occupancy_of(session_id, endpoint, head)

    async def _occupancy_of(
        self, session_id: str, endpoint: Endpoint, head: str | None
    ) -> Occupancy:
        measured = measured_from(await self.store.run(lambda r: ledger.last_measurement(
            r, session_id, head=head, model=address(endpoint))))
        return await self.engine.occupancy(
            session_id,
            model=endpoint.model,
            window=endpoint.window,
            head=head,
            now=self.clock.now(),
            measured=measured,
            system_prompt=await self.requests.session_prompt(session_id),
            situation=self.requests.situation(),
            tools=self.tools.for_session(session_id, endpoint).specs(),
        )

    async def message_fit(
        self, session_id: str | None, text: str, *, model: str | None = None
    ) -> MessageFit:
        """How `text` would fit as the next message of `session_id` (None: a new chat) on
        `model`: asked before sending, so a message too big is cut or kept by the user's
        choice, never silently."""
        endpoint = await self.endpoints.for_estimate(model, None)
        system = tools = 0
        if session_id is not None:
            parts = dict((await self.occupancy(session_id, model=model)).breakdown)
            system, tools = parts.get("system", 0), parts.get("tools", 0)
        return await asyncio.to_thread(
            measure_fit, text, self.engine.counter, window=endpoint.window,
            system_tokens=system, tools_tokens=tools, config=self.engine.config.budget,
        )

    async def cut_to_fit(self, text: str, fit: MessageFit) -> str:
        """`text` cut to the room `fit` found (the start and the end kept, the cut marked)."""
        return await asyncio.to_thread(cut_to_fit, text, fit, self.engine.counter)

    async def capabilities(self, model: str | None = None, session_id: str | None = None) -> Any:
        """Which parameters `model` (default: the session's, else the default model) takes,
        as `providers.llm.ModelCapabilities`: the chat header shows only those controls."""
        from ...providers import llm

        if model is None and session_id is not None:
            session = await self.store.run(lambda r: r.get_session(session_id))
            model = session.model if session is not None and "/" in session.model else None
        endpoint = await self.endpoints.for_estimate(model, None)
        return await asyncio.to_thread(llm.model_capabilities, endpoint.model)

    async def next_cost(
        self, session_id: str, draft: str = "", *, model: str | None = None,
        api_base: str | None = None, view: SessionView | None = None,
    ) -> CostEstimate:
        """What the next request would cost if sent now with `draft` typed: its prompt (the
        occupancy of HEAD plus the draft) at the uncached price, and the ceiling with a
        full reply. A cache hit is never assumed (CTX-008)."""
        from ...providers import llm

        if view is None or view.session.id != session_id:
            view = await self.sessions.view(session_id)  # (`view`: as the caller shows it)
        chosen = model or (view.session.model if "/" in view.session.model else None)
        endpoint = await self.endpoints.for_estimate(chosen, api_base)
        occupancy = await self.occupancy(session_id, model=endpoint.choice or endpoint.model,
                                         api_base=api_base, view=view)
        settings = await self.settings.current(session_id)
        extra = await asyncio.to_thread(self.engine.counter.count, draft) if draft else 0
        # The last measurement is of the prompt before the reply it wrote: the local estimate
        # of the branch as it is now may be larger, and a reservation takes the larger one.
        prompt = max(int(occupancy.total_used), int(occupancy.estimated)) + extra
        reply = settings.parameters.max_tokens or endpoint.reply_cap or endpoint.max_output
        prompt_cost = await asyncio.to_thread(llm.reservation_cost, endpoint.model, prompt, 0)
        ceiling = await asyncio.to_thread(llm.reservation_cost, endpoint.model, prompt, reply)
        return CostEstimate(
            model=endpoint.model,
            prompt_tokens=prompt,
            max_reply_tokens=reply,
            prompt_usd=prompt_cost.usd,
            ceiling_usd=ceiling.usd,
            priced=ceiling.priced,
        )

    async def sees_images(self, model: str | None = None) -> bool:
        """Whether `model` (the default when None) takes images, asked before a message with
        images is sent so the user can choose what to do."""
        endpoint = await self.endpoints.for_estimate(model, None)
        return await asyncio.to_thread(llm_supports_vision, endpoint.model)

    async def model_endpoint(self, model: str | None = None) -> Endpoint:
        """How `model` (the default when None) would be reached, without starting anything:
        its display name, its window and whether that window is estimated (the /context
        dialog says so). Never raises for an unknown model."""
        return await self.endpoints.for_estimate(model, None)
