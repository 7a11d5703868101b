"""Whether a message about to be sent fits the model's window, and the message cut to fit:
the composer asks before sending, so what is sent is what every widget then reports."""

from __future__ import annotations

from dataclasses import dataclass

from ...core.budget import BudgetConfig, ContextOverflowError, plan_budget
from ...core.tokens import TokenCounter, truncate_to_tokens

DEFAULT_BUDGET = BudgetConfig()
# A message's role and separators, on top of its text (what `message_tokens` adds).
MESSAGE_FRAMING = 8


@dataclass(frozen=True, slots=True)
class MessageFit:
    """`tokens` the message has, `room` the window leaves it (the history budget once the
    system prompt, tools and the reply's reserve are placed), in a `window`-token model."""

    tokens: int
    room: int
    window: int

    @property
    def fits(self) -> bool:
        return self.tokens <= self.room


def measure_fit(
    text: str, counter: TokenCounter, *, window: int, system_tokens: int = 0,
    tools_tokens: int = 0, config: BudgetConfig = DEFAULT_BUDGET,
) -> MessageFit:
    try:
        budget = plan_budget(window, system_tokens=system_tokens, tools_tokens=tools_tokens,
                             config=config)
    except ContextOverflowError:
        return MessageFit(counter.count(text), 0, window)  # the send explains that one
    return MessageFit(counter.count(text), max(0, budget.history - MESSAGE_FRAMING), window)


def cut_to_fit(text: str, fit: MessageFit, counter: TokenCounter) -> str:
    """The start and the end of `text` within `fit.room` tokens, the cut marked."""
    if fit.fits:
        return text
    return truncate_to_tokens(text, fit.room, counter)
