"""What the chat costs, where the person reads it: each reply's tokens and price on hover,
the chat's total in the header, the next request's estimate beside the composer (counted
once typing pauses), and the Usage view by model, day and chat."""

from __future__ import annotations

import asyncio

from PySide6.QtCore import QEvent, QObject, QPoint, QTimer, Signal
from PySide6.QtGui import QHelpEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolTip, QWidget

from ...core.money import FREE, UNPRICED, estimate_text, money, spend_text
from ...core.reply import can_continue, reasoning_of
from ...services.turns.changes import TurnChanges
from ...services.turns.chat_service import ChatService
from ...services.turns.sessions import SessionView
from ...services.turns.spending import ChatTotal, ReplyCost, reply_costs_of, with_records
from ..chat.view import ChatView
from ..composer.composer import Composer
from ..dialogs.chat_controls import UsageDialog
from .ports import ModelPicker, OpenChat, Spawner
from .turn_views import is_pending

ESTIMATE_DELAY_MS = 700


def reply_cost_text(cost: ReplyCost, name: str = "", local: bool = False) -> str:
    """A reply's tokens and cost as its tooltip says them; `name` is the model's display
    name (its address when not given), `local` True for a model on this machine (free)."""
    cached = f", {cost.cache_read:,} of them cached" if cost.cache_read else ""
    price = money(cost.cost_usd, cost.priced)
    if local:  # whatever litellm thinks of the name, a model on this computer is free
        price = f"{FREE} (runs on this computer)"
    elif not cost.priced:
        price = f"{UNPRICED} (no known price for this model)"
    return (f"{cost.input_tokens:,} tokens in{cached} · {cost.output_tokens:,} out · {price}"
            f"\n{name or cost.model}")


class ChatCosts(QObject):
    costsShown = Signal(str)  # session id whose costs the header and tooltips now show
    estimateShown = Signal(str)  # the composer's estimate text

    def __init__(
        self,
        parent: QObject,
        *,
        chat_service: ChatService,
        chat: OpenChat,
        models: ModelPicker,
        tasks: Spawner,
        composer: Composer,
        chat_view: ChatView,
        window: QWidget,
    ) -> None:
        super().__init__(parent)
        self._chat = chat_service
        self._sessions = chat_service.sessions
        self._open = chat
        self._models = models
        self._tasks = tasks
        self._composer = composer
        self._chat_view = chat_view
        self._window = window
        self.costs: dict[str, ReplyCost] = {}
        self.total: ChatTotal | None = None  # the header's figure, for `_counted[0]`
        # What `costs` and `total` account for: the session, the replies whose cost was
        # looked up (found or not) and how many replies its graph held. A redraw that shows
        # nothing new reads nothing; a turn's changes are counted in without a read.
        self._counted: tuple[str, set[str], int] | None = None
        self._replies_seen: tuple[SessionView, tuple[str, ...], int] | None = None
        self._reading = 0  # refreshes on their way: what they read may miss a turn's rows
        self._read_token = 0
        self.usage: UsageDialog | None = None
        self.cost_label = QLabel("")
        self.cost_label.setObjectName("ChatCost")
        self.cost_label.setAccessibleName("What this chat has cost")
        self._estimate_widgets()
        chat_view.list.viewport().installEventFilter(self)

    def _estimate_widgets(self) -> None:
        composer = self._composer
        self.estimate_label = QLabel("")
        self.estimate_label.setObjectName("ComposerEstimate")
        self.estimate_label.setToolTip(
            "What the next request would cost if sent now, at the uncached price: a "
            "cache hit is never assumed.")
        footer = composer.hint.parentWidget()
        layout = footer.layout() if footer is not None else None
        row = None
        if layout is not None:
            for i in range(layout.count()):
                item = layout.itemAt(i)
                inner = item.layout() if item is not None else None
                if isinstance(inner, QHBoxLayout) and inner.indexOf(composer.hint) >= 0:
                    row = inner
        if row is not None:
            row.insertWidget(row.indexOf(composer.hint) + 1, self.estimate_label)
        self._estimate_timer = QTimer(self)
        self._estimate_timer.setSingleShot(True)
        self._estimate_timer.setInterval(ESTIMATE_DELAY_MS)
        self._estimate_timer.timeout.connect(self._estimate)
        composer.input.textChanged.connect(self._estimate_timer.start)
        # asking other models changes what the next send costs
        composer.several.chosenChanged.connect(lambda _models: self._estimate_timer.start())
        # and so does another model in the picker, with nothing typed
        composer.modelChanged.connect(lambda _model: self._estimate_timer.start())

    # --- following the open chat ----------------------------------------------------

    def view_changed(self, view: SessionView | None) -> None:
        if view is None:
            self.costs = {}
            self.total = None
            self._counted = None
            self.cost_label.setText("")
            self.estimate_label.setText("")
            return
        if not self.accounts_for(view):
            self._tasks.spawn(self.refresh_costs(view.session.id), name="chat-costs")
        self._estimate_timer.start()

    def accounts_for(self, view: SessionView) -> bool:
        """Whether the figures shown are those of `view`: its chat, every reply on its path
        looked up, and no reply in its graph that they have not counted."""
        counted = self._counted
        if counted is None or counted[0] != view.session.id or self.total is None:
            return False
        _, known, replies = counted
        on_path, in_graph = self._replies_of(view)
        return in_graph == replies and all(i in known for i in on_path)

    def _replies_of(self, view: SessionView) -> tuple[tuple[str, ...], int]:
        """The replies on `view`'s path and how many its graph holds (counted once a view:
        a redraw asks more than once)."""
        seen = self._replies_seen
        if seen is None or seen[0] is not view:
            on_path = tuple(n.id for n in view.path if n.role == "assistant")
            seen = (view, on_path, sum(1 for n in view.graph if n.role == "assistant"))
            self._replies_seen = seen
        return seen[1], seen[2]

    def refresh_soon(self) -> None:
        """Read the open chat's figures again, unless they already account for it."""
        view = self._open.current_view
        if view is not None and not self.accounts_for(view):
            self._tasks.spawn(self.refresh_costs(view.session.id), name="chat-costs")

    def apply_turn(self, changes: TurnChanges) -> None:
        """Count a turn's usage rows in (its replies' costs, the chat's total) from what it
        changed, without reading the ledger. When the figures shown are not the base the
        rows add to (another chat, a read still on its way that may hold some of them, a
        reply the figures already counted), they are read again instead."""
        counted = self._counted
        replies = [n for n in changes.nodes if n.role == "assistant"]
        if counted is None or counted[0] != changes.session_id or self.total is None:
            return  # not this chat's figures: opening it reads them
        session_id, known, count = counted
        if (not changes.complete or self._reading
                or any(n.id in known for n in replies)):
            self._read_token += 1  # what a read on its way brings back is dropped
            self._tasks.spawn(self.refresh_costs(session_id), name="chat-costs")
            return
        self.costs.update(reply_costs_of(changes.records))
        known.update(n.id for n in replies)
        self._counted = (session_id, known, count + len(replies))
        self.total = with_records(self.total, changes.records, self._models.is_local)
        self._show_total(self.total)
        self.costsShown.emit(session_id)

    async def refresh_costs(self, session_id: str) -> None:
        view = self._open.current_view
        if view is None or view.session.id != session_id:
            return
        on_path, replies = self._replies_of(view)
        ids = list(on_path)
        self._read_token += 1
        token = self._read_token
        self._reading += 1
        try:
            costs = await self._chat.spending.reply_costs(ids)
            total = await self._chat.spending.chat_total(session_id,
                                                         local=self._models.is_local)
        finally:
            self._reading -= 1
        if self._open.current_session_id != session_id or token != self._read_token:
            return
        self.costs = dict(costs)
        self.total = total
        self._counted = (session_id, set(ids), replies)
        self._show_total(total)
        self.costsShown.emit(session_id)

    def _show_total(self, total: ChatTotal) -> None:
        if total.requests == 0:
            self.cost_label.setText("")
        else:
            self.cost_label.setText(spend_text(total.cost_usd, total.requests,
                                               total.unpriced_requests, total.free_requests))
            notes = []
            if total.free_requests:
                notes.append(f"{total.free_requests} to a model on this computer (free)")
            if total.unpriced_requests:
                notes.append(f"{total.unpriced_requests} to a model with no known price")
            self.cost_label.setToolTip(
                f"This chat, every branch: {total.requests} request"
                f"{'s' if total.requests != 1 else ''}, {total.input_tokens:,} tokens in "
                f"({total.cache_read:,} cached), {total.output_tokens:,} out"
                + "".join(f"; {n}" for n in notes))

    # --- the next request -----------------------------------------------------------

    def _estimate(self) -> None:
        try:
            asyncio.get_running_loop()
        except RuntimeError:  # the debounce fired after the window's loop stopped
            return
        sid = self._open.current_session_id
        if sid is not None and not self._chat.is_running(sid):
            self._tasks.spawn(self.estimate(sid), name="estimate")

    def _shown_view(self, session_id: str) -> SessionView | None:
        """The chat as the window shows it, when it is stored whole (a message still on its
        way is not: the estimate then reads the chat itself)."""
        view = self._open.current_view
        if view is None or view.session.id != session_id or (
                view.head is not None and is_pending(view.head)):
            return None
        return view

    def asked(self) -> list[str]:
        """The models the next send goes to: those ticked under "Several…" when a set is
        chosen, else the picker's."""
        several = self._composer.several.chosen()
        if several:
            return list(several)
        selected = self._models.selected()
        return [selected] if selected else []

    async def estimate(self, session_id: str) -> str:
        """The next send's cost by Send: one request per model asked, summed, those with no
        known price counted apart and those on this computer free."""
        draft = self._composer.text()
        asked = self.asked()
        usd = 0.0
        unpriced: list[str] = []
        free: list[str] = []
        lines = []
        pending: list[str | None] = list(asked) or [None]
        for model in pending:
            est = await self._chat.estimate_next_cost(session_id, draft, model=model,
                                                      view=self._shown_view(session_id))
            name = self._models.label_for(model) if model else self._models.selected_label()
            if self._models.is_local(model):
                free.append(name)
                lines.append(f"{name}: {est.prompt_tokens:,} tokens, {FREE} (runs on this "
                             "computer)")
            elif not est.priced:
                unpriced.append(name)
                lines.append(f"{name}: {est.prompt_tokens:,} tokens, {UNPRICED} (no known "
                             "price)")
            else:
                usd += est.prompt_usd
                lines.append(f"{name}: {est.prompt_tokens:,} tokens at the uncached price "
                             f"{money(est.prompt_usd)}; up to {money(est.ceiling_usd)} with a "
                             f"reply of {est.max_reply_tokens:,} tokens")
        requests = max(len(asked), 1)
        text = estimate_text(usd, requests, len(unpriced), len(free))
        if requests == 1:
            tip = f"The next request: {lines[0]}."
        else:
            tip = (f"The next send asks {requests} models, one request each "
                   f"({spend_text(usd, requests, len(unpriced), len(free))}):\n"
                   + "\n".join(lines))
        tip += "\nA cache hit is never assumed."
        if self._open.current_session_id == session_id:
            self.estimate_label.setText(text)
            self.estimate_label.setToolTip(tip)
            self.estimateShown.emit(text)
        return text

    # --- a reply's cost on hover ------------------------------------------------------

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if event.type() == QEvent.Type.ToolTip and isinstance(event, QHelpEvent):
            text = self.tooltip_at(event.pos())
            if text:
                QToolTip.showText(event.globalPos(), text, self._chat_view.list)
                return True
        return False

    def tooltip_at(self, pos: QPoint) -> str:
        chat = self._chat_view
        index = chat.list.indexAt(pos)
        if not index.isValid():
            return ""
        node = chat.model.row_at(index.row()).node
        if node is None or node.role != "assistant":
            return ""
        return self.reply_text(node.id)

    def cost_text(self, cost: ReplyCost) -> str:
        models = self._models
        return reply_cost_text(cost, models.label_for(cost.model), models.is_local(cost.model))

    def cost_line(self, node_id: str) -> str | None:
        """The first line of the reply's cost (None before it is known), for its menu."""
        cost = self.costs.get(node_id)
        return self.cost_text(cost).split("\n")[0] if cost is not None else None

    def reply_text(self, node_id: str) -> str:
        cost = self.costs.get(node_id)
        view = self._open.current_view
        node = view.graph.get(node_id) if view is not None and node_id in view.graph else None
        lines = [self.cost_text(cost)] if cost is not None else []
        if node is not None and reasoning_of(node):
            lines.append("Thinking kept apart from the answer: right-click → Show thinking")
        if node is not None and can_continue(node):
            lines.append("Cut short: right-click → Continue this reply")
        return "\n".join(lines)

    # --- usage -----------------------------------------------------------------------

    def open_usage(self) -> UsageDialog:
        if self.usage is None:
            self.usage = UsageDialog(self._window)
        self.usage.show()
        self.usage.raise_()
        self._tasks.spawn(self.fill_usage(), name="usage")
        return self.usage

    async def fill_usage(self) -> None:
        assert self.usage is not None
        sessions = await self._sessions.list()
        titles = {s.id: s.title for s in sessions}
        for by in ("model", "day", "session"):
            rows = await self._chat.spending.spend(by, local=self._models.is_local)
            self.usage.show_rows(by, rows, titles, names=self._models.label_for)
