"""What each stage of a `treechat send` adds to the process's resident memory, the stages run
one after another in this process, in the command's order: its modules, DuckDB, a new store,
the committed message and the daily backup, the services with their token counter, the
request counted, the token tables let go of, litellm imported and warmed (into the memory
the tables held), and a first and a second streamed reply.

    python -m tests.support.send_stages <openai-compatible base URL> <data dir>

prints one JSON list of [stage, added MB, resident MB, peak MB]; the server must answer two
replies. Run it in a process of its own: the figures are this process's /proc/self/status.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

MODEL = "openai/gpt-4o-mini"


def _status() -> tuple[float, float]:
    found: dict[str, float] = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                found[key] = int(value.split()[0]) / 1024
    return found["VmRSS"], found["VmHWM"]


def main(base: str, data_dir: Path) -> list[tuple[str, float, float, float]]:
    rows: list[tuple[str, float, float, float]] = []
    previous = _status()[0]

    def mark(stage: str) -> None:
        nonlocal previous
        rss, peak = _status()
        rows.append((stage, rss - previous, rss, peak))
        previous = rss

    mark("python")
    import treechat.cli.send  # noqa: F401

    mark("the command's modules")
    import duckdb  # noqa: F401

    mark("import duckdb")
    from treechat.store.database import Store

    data_dir.mkdir(parents=True, exist_ok=True)
    store = Store.open(data_dir / "chats.duckdb")
    mark("open a new store")
    from treechat.services.turns.sessions import SessionService

    async def commit() -> tuple[str, str]:
        sessions = SessionService(store)
        session = await sessions.create(model=MODEL)
        return session.id, (await sessions.append_message(session.id, "hello")).id

    session_id, user_id = asyncio.run(commit())
    mark("the message committed")
    store.backup_if_due()
    mark("the daily backup")
    from treechat.cli._turn import run_turn, turn_services

    services = turn_services(store, data_dir)
    mark("services and the token counter")
    from treechat.providers import llm
    from treechat.providers.tokenizer import release_encodings

    def counted() -> None:  # what `treechat send` does here, a stage at a time
        mark("the request counted")
        release_encodings()
        mark("the token tables let go of")
        if not llm.is_loaded():
            llm.litellm_module()
            mark("litellm imported and warmed")

    services.chat.config.request_ready = counted
    services.chat.config.occupancy_after_reply = False
    for stage in ("first streamed reply", "second streamed reply"):
        run_turn(services, session_id, lambda: services.chat.retry(
            session_id, user_id, model=MODEL, api_base=base, on_event=lambda _: None))
        mark(stage)
    store.close()
    return rows


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], Path(sys.argv[2]))))
