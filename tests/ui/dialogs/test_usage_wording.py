"""Usage says the same of the same requests everywhere: a day's cell and the note under it
count free (on this computer) and unpriced requests apart, from the same rows, and models
are named as the picker names them."""

from __future__ import annotations

from treechat.services.turns.spending import spend_grouped
from treechat.store.usage import UsageRecord
from treechat.ui.dialogs.chat_controls import UsageDialog, spend_note, spend_text

LOCAL = "ollama/llama3.2"
HOSTED = "openrouter/some-new-model"
PRICED = "openai/gpt-4o"
NOON = 1_800_000_000.0


def rec(n: int, model: str, *, priced: bool, cost: float = 0.0) -> UsageRecord:
    return UsageRecord(f"r{n}", "s1", model, NOON + n, input_tokens=100, output_tokens=10,
                       cost_usd=cost, priced=priced)


def test_free_and_unpriced_requests_are_counted_apart_the_same_way_everywhere(
    qapp: object,
) -> None:
    records = [
        *(rec(i, LOCAL, priced=False) for i in range(3)),
        rec(3, LOCAL, priced=True),  # litellm's map prices some local names at $0
        *(rec(4 + i, HOSTED, priced=False) for i in range(4)),
        rec(9, PRICED, priced=True, cost=0.25),
    ]
    local = {LOCAL: True}.get

    def is_local(model: str) -> bool:
        return bool(local(model))

    (day,) = spend_grouped(records, "day", is_local)
    assert (day.requests, day.free_requests, day.unpriced_requests) == (9, 4, 4)
    assert spend_text(day.cost_usd, day.requests, day.unpriced_requests, day.free_requests) \
        == "$0.25 + 4 unpriced"
    models = {r.key: r for r in spend_grouped(records, "model", is_local)}
    assert spend_text(models[LOCAL].cost_usd, models[LOCAL].requests,
                      models[LOCAL].unpriced_requests, models[LOCAL].free_requests) == "free"
    assert spend_text(0.0, 4, 4) == "unpriced"

    dialog = UsageDialog()
    names = {LOCAL: "Llama 3.2 (Ollama)", HOSTED: "Some new model", PRICED: "GPT-4o"}
    dialog.show_rows("model", list(models.values()), names=names.__getitem__)
    dialog.show_rows("day", [day])
    shown = [dialog.tables["model"].item(i, 0).text() for i in range(3)]
    assert sorted(shown) == sorted(names.values())  # display names, not ids
    assert dialog.tables["day"].item(0, 5).text() == "$0.25 + 4 unpriced"
    assert dialog.note.text() == spend_note(4, 4, True) == (
        "4 requests to models on this computer cost nothing. 4 requests to models with no "
        "known price are counted in tokens only (unpriced).")
