"""Testing a connection: a one-token call to a real server on 127.0.0.1, the server's own
words when the model list cannot be read, and the bundled model refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from keyring.backends import fail
from tests.support.model_servers import OpenAIServer

from treechat.providers.connections import ConnectionProblem
from treechat.providers.keys import KeyStore
from treechat.services.bootstrap import build_services
from treechat.services.models.trial_call import trial_call


@pytest.mark.asyncio
async def test_a_test_call_answers_and_a_dead_server_says_why(tmp_path: Path) -> None:
    lab = OpenAIServer([{"id": "lab-model"}])
    services = build_services(tmp_path, bundled=True, detect_local_servers=False,
                              keys=KeyStore(backend=fail.Keyring(), environ={}))
    conns = services.connections
    assert conns is not None
    try:
        await conns.add("openai-compatible", "lab", base_url=lab.openai_base)
        outcome = await trial_call(conns, "lab")
        assert outcome.ok and outcome.model == "lab-model" and "answered" in outcome.message
        assert lab.chat_hits(), "the one-token call reached the server"
        with pytest.raises(ConnectionProblem, match="starts on demand"):
            await trial_call(conns, "local")
        lab.stop()
        failed = await trial_call(conns, "lab")
        assert not failed.ok and "could not be read" in failed.message and failed.detail
    finally:
        await services.close()
        services.close_store()
        lab.stop()
