"""Several models at once: one message answered by N models as sibling replies streamed
together (each request waits its turn at its own server), the siblings read back side by side
with their model, cost and time to first token, and fused by one model into a merge node that
reads them all. Each reply is an ordinary turn of the chat service: its own snapshot, its own
ledger row."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...core.model import GraphError, Node
from ...store.repository import Repository
from ..attachments import PreparedFile
from ..merge import AttachService, MergeResult
from .chat_service import Attachment, ChatService
from .events import ReasoningDelta, TextDelta, TurnError, TurnEvent, TurnFailed
from .sessions import load_view

DEFAULT_FUSE_INSTRUCTION = (
    "Several models answered the message above; their replies are attached above. Write the "
    "one best answer: keep what each got right, correct what any got wrong, and where they "
    "disagree, name the disagreement and say which way you went and why."
)
MODEL_SETS_KEY = "model_sets"  # settings: the saved sets, {name: [model, ...]}
BEAM_KEY = "beam:"  # settings, + a message's id: the beam asked of it (models, first tokens)
MAX_MODELS = 8  # more columns than a window shows side by side


@dataclass(frozen=True, slots=True)
class BeamEvent:
    """One sibling's turn event: which of the models (`index` into the models asked) said it."""

    session_id: str
    index: int
    model: str
    event: TurnEvent


BeamSink = Callable[[BeamEvent], None]


@dataclass(frozen=True, slots=True)
class SiblingReply:
    """One reply to a message, as the compare view and a fuse read it: `first` is the
    version (the node `< N/M >` switches to), `last` where the reply ended (after its tool
    steps), `text` all its steps' text."""

    first: Node
    last: Node
    text: str
    model: str
    label: str
    cost_usd: float | None  # None: no request of the ledger wrote it (an imported reply)
    priced: bool
    first_token_s: float | None  # from the send to the first streamed piece, when measured
    interrupted: bool


@dataclass(frozen=True, slots=True)
class BeamResult:
    """What a send to several models left: the message and, per model asked (in order), its
    reply (None when nothing came) and the error that ended it, if any."""

    session_id: str
    message_id: str | None
    models: tuple[str, ...]
    replies: tuple[Node | None, ...]
    errors: tuple[TurnError | None, ...]
    first_token_s: tuple[float | None, ...]


def parse_models(text: str | Sequence[str]) -> tuple[str, ...]:
    """`A,B,C` (or a list) as distinct model ids in order; a clear error for none or too many."""
    words = text.split(",") if isinstance(text, str) else list(text)
    models = tuple(dict.fromkeys(w.strip() for w in words if w.strip()))
    if not models:
        raise ValueError("name at least one model, e.g. --models openai/gpt-4o,anthropic/…")
    if len(models) > MAX_MODELS:
        raise ValueError(f"at most {MAX_MODELS} models at once ({len(models)} given)")
    return models


class BeamService:
    """Fans one message out to several models, reads the siblings back, fuses them."""

    def __init__(self, chat: ChatService, attach: AttachService | None = None) -> None:
        self.chat = chat
        self.attach = attach or AttachService(chat)
        self.store = chat.store
        self.clock = chat.clock

    # --- asking several ------------------------------------------------------------

    async def send(
        self,
        session_id: str,
        text: str,
        models: Sequence[str],
        *,
        attachments: Sequence[Attachment] = (),
        files: Sequence[PreparedFile | str | os.PathLike[str]] = (),
        on_event: BeamSink | None = None,
    ) -> BeamResult:
        """Commit `text` under HEAD, then one reply to it per model, all at once."""
        chosen = parse_models(models)
        started = self.clock.monotonic()
        commit = await self.chat.message_writer(session_id, text, attachments, files)
        return await self._fan_out(session_id, commit, chosen, started, on_event)

    async def ask(
        self, session_id: str, message_id: str, models: Sequence[str], *,
        on_event: BeamSink | None = None,
    ) -> BeamResult:
        """New replies to the user message `message_id`, one per model, all at once."""
        chosen = parse_models(models)
        started = self.clock.monotonic()

        async def locate() -> tuple[str | None, Node | None]:
            view = await self.chat.sessions.view(session_id)
            node = view.graph.get(message_id)
            if node.role != "user":
                raise GraphError("several models answer a message: pick a user message")
            return node.id, None

        return await self._fan_out(session_id, locate, chosen, started, on_event)

    async def _fan_out(
        self, session_id: str, before: Any, models: tuple[str, ...], started: float,
        on_event: BeamSink | None,
    ) -> BeamResult:
        first: list[float | None] = [None] * len(models)
        errors: list[TurnError | None] = [None] * len(models)
        written: list[str] = []

        async def commit() -> tuple[str | None, Node | None]:
            parent, user = await before()
            written.append(parent or "")
            return parent, user

        def sink_for(index: int) -> Callable[[TurnEvent], None]:
            def sink(event: TurnEvent) -> None:
                if first[index] is None and isinstance(event, TextDelta | ReasoningDelta):
                    first[index] = self.clock.monotonic() - started
                if isinstance(event, TurnFailed):
                    errors[index] = event.error
                if on_event is not None:
                    on_event(BeamEvent(session_id, index, models[index], event))
            return sink

        runs = [(m, sink_for(i)) for i, m in enumerate(models)]
        replies = await self.chat.fan_out(session_id, commit, runs)
        message_id = written[0] if written else None
        if message_id:
            await self._record(session_id, message_id, models, replies, first)
        return BeamResult(session_id, message_id, models, replies, tuple(errors), tuple(first))

    async def _record(
        self, session_id: str, message_id: str, models: tuple[str, ...],
        replies: Sequence[Node | None], first: Sequence[float | None],
    ) -> None:
        """Keep what the graph does not say (the models asked, each reply's first token),
        and leave HEAD and the chat's model on the first model's reply, not on whichever
        finished last."""
        firsts = {r.id: t for r, t in zip(replies, first, strict=True)
                  if r is not None and t is not None}
        lead = next((r for r in replies if r is not None), None)
        now = self.clock.now()

        def work(repo: Repository) -> None:
            with repo.transaction():
                key = BEAM_KEY + message_id
                old = repo.get_setting(key) or {}
                merged = {**(old.get("first_token_s") or {}), **firsts}
                repo.set_setting(key, {"models": list(models), "first_token_s": merged})
                repo.update_session(session_id, model=models[0])
                if lead is not None:
                    repo.set_head(session_id, lead.id, now)

        await self.store.run(work)

    # --- reading the siblings ------------------------------------------------------

    async def siblings(self, session_id: str, node_id: str) -> tuple[SiblingReply, ...]:
        """Every reply to the message `node_id` is (or the one a reply `node_id` answers): in
        the order their models were asked, then in the order they were written."""

        def read(repo: Repository) -> tuple[Any, dict[str, Any]]:
            view = load_view(repo, session_id)
            node = view.graph.get(node_id)
            message = node if node.role == "user" else view.graph.get(node.predecessor or "")
            return (view, message), dict(repo.get_setting(BEAM_KEY + message.id) or {})

        (view, message), beam = await self.store.run(read)
        first: dict[str, float] = dict(beam.get("first_token_s") or {})
        asked = [str(m) for m in beam.get("models") or ()]
        graph = view.graph

        def rank(node: Node) -> tuple[int, int]:  # in the order the models were asked
            model = str(node.metadata.get("model") or "")
            return (asked.index(model) if model in asked else len(asked)), node.seq

        heads = sorted((c for c in graph.conversation_children(message.id)
                        if c.role == "assistant" and c.id not in view.hidden), key=rank)
        chains = [_reply_chain(graph, c) for c in heads]
        costs = await self.chat.spending.reply_costs([n.id for ch in chains for n in ch])
        out = []
        for chain in chains:
            head, last = chain[0], chain[-1]
            rows = [costs[n.id] for n in chain if n.id in costs]
            out.append(SiblingReply(
                first=head, last=last,
                text="\n\n".join(n.text for n in chain if n.text.strip()),
                model=str(head.metadata.get("model") or head.name or ""),
                label=str(head.metadata.get("model_label") or head.name or "unknown model"),
                cost_usd=sum(r.cost_usd for r in rows) if rows else None,
                priced=all(r.priced for r in rows),
                first_token_s=first.get(head.id),
                interrupted=last.interrupted,
            ))
        return tuple(out)

    # --- fusing ----------------------------------------------------------------------

    async def fuse(
        self,
        session_id: str,
        node_id: str,
        *,
        model: str,
        instruction: str = DEFAULT_FUSE_INSTRUCTION,
        replies: Sequence[str] | None = None,
        on_event: Callable[[TurnEvent], None] | None = None,
    ) -> MergeResult:
        """One reply by `model` that reads the replies to the message `node_id` is (or
        answers): a merge node whose parents are every reply (or those of `replies`, ids of
        their first nodes), carrying the instruction and the models' names in order."""
        found = await self.siblings(session_id, node_id)
        if replies is not None:
            wanted = set(replies)
            found = tuple(s for s in found if s.first.id in wanted or s.last.id in wanted)
        if len(found) < 2:
            raise GraphError("fusing needs at least two replies to the same message")
        names = "; ".join(f"{i}. {s.label}" for i, s in enumerate(found, start=1))
        asked = instruction.strip() or DEFAULT_FUSE_INSTRUCTION
        text = f"{asked}\n\nThe replies, in order: {names}."
        heads = [s.last.id for s in found]
        plan = await self.attach.start_merge(session_id, heads, base=heads[0], instruction=text)
        return await self.attach.continue_merge(plan, model=model, on_event=on_event)

    # --- saved sets ----------------------------------------------------------------

    async def model_sets(self) -> dict[str, tuple[str, ...]]:
        """The saved sets of models ("my three"), by name."""
        raw = await self.store.run(lambda r: r.get_setting(MODEL_SETS_KEY) or {})
        return _sets_of(raw)

    async def save_model_set(self, name: str, models: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Save (or replace) the set `name`; returns every set."""
        name = " ".join(name.split())
        if not name:
            raise ValueError("a saved set needs a name")
        chosen = parse_models(models)

        def work(repo: Repository) -> dict[str, tuple[str, ...]]:
            sets = _sets_of(repo.get_setting(MODEL_SETS_KEY) or {})
            sets[name] = chosen
            repo.set_setting(MODEL_SETS_KEY, {k: list(v) for k, v in sets.items()})
            return sets

        return await self.store.run(work)

    async def delete_model_set(self, name: str) -> dict[str, tuple[str, ...]]:
        def work(repo: Repository) -> dict[str, tuple[str, ...]]:
            sets = _sets_of(repo.get_setting(MODEL_SETS_KEY) or {})
            sets.pop(name, None)
            repo.set_setting(MODEL_SETS_KEY, {k: list(v) for k, v in sets.items()})
            return sets

        return await self.store.run(work)


def _sets_of(raw: object) -> dict[str, tuple[str, ...]]:
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): tuple(str(m) for m in v) for k, v in raw.items()
            if isinstance(v, list | tuple) and v}


def _reply_chain(graph: Any, first: Node) -> list[Node]:
    """A reply and the assistant steps after its tool calls, up to where it ended (the
    newest step at each fork)."""
    chain = [first]
    while True:
        nxt = [c for c in graph.conversation_children(chain[-1].id) if c.role == "assistant"]
        if not nxt or not chain[-1].metadata.get("tool_calls"):
            return chain
        chain.append(max(nxt, key=lambda n: n.seq))
