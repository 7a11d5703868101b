"""The bundled model's replies are capped (it can repeat itself for minutes otherwise): a
chat that sets no cap gets `BUNDLED_REPLY_CAP`, one that sets its own gets that. Runs the
real bundled llama.cpp server."""

from __future__ import annotations

from pathlib import Path

import pytest

from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.catalog import BUNDLED_ID, BUNDLED_REPLY_CAP
from treechat.store import usage as ledger

LONG = "Write the numbers from 1 to 3000, one per line, and nothing else."


@pytest.mark.asyncio
async def test_a_bundled_reply_stops_at_the_default_cap_unless_the_chat_sets_one(
    tmp_path: Path,
) -> None:
    services = build_services(tmp_path / "data", bundled=True, detect_local_servers=False,
                              keys=KeyStore(environ={}))
    try:
        assert services.models.default_reply_cap(BUNDLED_ID) == BUNDLED_REPLY_CAP
        assert services.models.default_reply_cap("openai/gpt-4o") is None
        session = await services.chat.sessions.create(model=BUNDLED_ID)
        node = await services.chat.send(session.id, LONG)
        assert node is not None
        record = services.store.call(lambda r: ledger.last_measurement(r, session.id))
        assert record is not None
        assert 0 < record.output_tokens <= BUNDLED_REPLY_CAP
        est = await services.chat.estimate_next_cost(session.id, "more", model=BUNDLED_ID)
        assert est.max_reply_tokens == BUNDLED_REPLY_CAP

        other = await services.chat.sessions.create(model=BUNDLED_ID)
        await services.chat.settings.update(other.id, max_tokens=40)
        await services.chat.send(other.id, LONG)
        mine = services.store.call(lambda r: ledger.last_measurement(r, other.id))
        assert mine is not None and 0 < mine.output_tokens <= 40
    finally:
        await services.close()
        services.close_store()
