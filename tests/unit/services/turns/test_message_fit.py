"""Whether a message fits the window before it is sent, and the message cut to fit."""

from __future__ import annotations

from treechat.core.budget import BudgetConfig
from treechat.providers.tokenizer import counter_for
from treechat.services.turns.message_fit import MESSAGE_FRAMING, cut_to_fit, measure_fit

COUNTER = counter_for("openai/gpt-4o")


def test_a_short_message_fits_and_is_sent_as_it_is() -> None:
    fit = measure_fit("a short question", COUNTER, window=8192)
    assert fit.fits and 0 < fit.tokens < fit.room < 8192
    assert cut_to_fit("a short question", fit, COUNTER) == "a short question"


def test_the_room_is_the_history_budget_less_the_framing() -> None:
    small = measure_fit("x", COUNTER, window=8192, system_tokens=3000, tools_tokens=1000)
    large = measure_fit("x", COUNTER, window=8192)
    assert small.room < large.room
    assert large.room + MESSAGE_FRAMING <= 8192


def test_a_long_message_is_cut_keeping_its_start_and_end() -> None:
    text = "START " + "filler words here " * 4000 + " END"
    fit = measure_fit(text, COUNTER, window=4096)
    assert not fit.fits
    cut = cut_to_fit(text, fit, COUNTER)
    assert cut.startswith("START") and cut.endswith("END")
    assert COUNTER.count(cut) <= fit.room


def test_no_room_at_all_when_the_fixed_parts_overflow() -> None:
    fit = measure_fit("hello", COUNTER, window=1024, system_tokens=5000,
                      config=BudgetConfig())
    assert fit.room == 0 and not fit.fits
