"""`treechat send … --models A,B,C`: one message answered by several models at once, each
reply printed under its model's name as it ends; `treechat fuse`: one model's reply that
reads every reply to the last message, written as a merge of them."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._common import CliInputError, Subcommands, add_command, data_dir, find_session_id
from ._turn import run_turn, turn_services

if TYPE_CHECKING:
    from ..core.model import Node
    from ..services.turns.beam import BeamResult
    from ..store.database import Store

# The services are imported inside the functions: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB, the providers and more.


def add_parser(sub: Subcommands) -> None:
    """`fuse` (`send --models` is `send`'s own option)."""
    p = add_command(
        sub, "fuse", cmd_fuse,
        help="one reply that reads every reply to the last message (from `send --models`) and "
        "combines them, written as a merge of them",
    )
    p.add_argument("session", help="the chat: id, unique id prefix or exact title")
    p.add_argument("--model", required=True, help="the model that writes the fused reply")
    p.add_argument("--prompt", metavar="TEXT",
                   help="the instruction (default: the best combined answer, with the "
                   "disagreements named)")


def check_models(args: argparse.Namespace) -> None:
    """`--models` as a tuple of distinct ids, or a one-line error."""
    from ..services.turns.beam import parse_models

    if args.model:
        raise CliInputError("give --model or --models, not both")
    if args.api_base:
        raise CliInputError("--api-base names one server: give it with --model, not --models")
    try:
        args.models = parse_models(args.models)
    except ValueError as exc:
        raise CliInputError(str(exc)) from None


def several_replies(
    store: Store, data_dir: Path, args: argparse.Namespace, session_id: str, user_id: str,
    text: str,
) -> int:
    """Answer the committed message `user_id` with every model of `args.models` at once;
    each reply goes to standard output under its model's name when it ends, its figures to
    standard error."""
    from ..services.turns.beam import BeamEvent, BeamService
    from ..services.turns.events import TurnFinished

    services = turn_services(store, data_dir)
    beam = BeamService(services.chat)
    models: tuple[str, ...] = args.models
    result: list[BeamResult] = []
    print("[" + ", ".join(services.models.display_name(m) for m in models) + "]",
          file=sys.stderr, flush=True)

    def on_event(event: BeamEvent) -> None:
        if isinstance(event.event, TurnFinished):
            _print_reply(services.models.display_name(event.model), event.event.node)

    async def work() -> None:
        result.append(await beam.ask(session_id, user_id, models, on_event=on_event))

    code = run_turn(services, session_id, work)
    if code is not None:
        return code
    outcome = result[0]
    for model, error, first in zip(outcome.models, outcome.errors, outcome.first_token_s,
                                   strict=True):
        name = services.models.display_name(model)
        if error is not None:
            print(f"treechat: {name}: {error.message}", file=sys.stderr)
        elif first is not None:
            print(f"[{name}: first token after {first:.2f} s]", file=sys.stderr)
    print(f"[chat {session_id[:12]} · {len(models)} replies; "
          f"`treechat fuse {session_id[:12]} --model M` combines them]", file=sys.stderr)
    return 1 if any(e is not None for e in outcome.errors) else 0


def _print_reply(name: str, node: Node) -> None:
    usage = node.metadata.get("usage") or {}
    figures = [name]
    if usage:
        figures.append(f"{usage.get('prompt_tokens', 0)} prompt tokens")
        figures.append(f"{usage.get('output_tokens', 0)} output")
        if usage.get("cost_usd") is not None:
            figures.append(f"${usage['cost_usd']:.6f}")
    if node.interrupted:
        figures.append("interrupted")
    sys.stdout.write(f"\n## {name}\n\n{node.text}\n")
    sys.stdout.flush()
    print("[" + " · ".join(figures) + "]", file=sys.stderr, flush=True)


def cmd_fuse(args: argparse.Namespace) -> int:
    """Fuse the replies to the message HEAD answers (or is) with `--model`."""
    from ..core.model import GraphError
    from ..services.store_life.recovery import open_and_recover
    from ..services.turns.beam import DEFAULT_FUSE_INSTRUCTION, BeamService
    from ..services.turns.events import TextDelta, TurnFailed, TurnFinished
    from ..store.database import default_store_path

    folder = data_dir(args)
    store = open_and_recover(default_store_path(folder))
    try:
        session_id = find_session_id(store, args.session)
        session = store.call(lambda r: r.get_session(session_id))
        if session is None or session.head is None:
            raise CliInputError("the chat has no messages to fuse")
        head: str = session.head
        services = turn_services(store, folder)
        beam = BeamService(services.chat)
        failed: list[TurnFailed] = []
        finished: list[TurnFinished] = []
        refused: list[str] = []

        def on_event(event: object) -> None:
            if isinstance(event, TextDelta):
                sys.stdout.write(event.text)
                sys.stdout.flush()
            elif isinstance(event, TurnFailed):
                failed.append(event)
            elif isinstance(event, TurnFinished):
                finished.append(event)

        async def work() -> None:
            try:
                await beam.fuse(session_id, head, model=args.model,
                                instruction=args.prompt or DEFAULT_FUSE_INSTRUCTION,
                                on_event=on_event)
            except GraphError as exc:
                refused.append(str(exc))

        print(f"[fusing with {services.models.display_name(args.model)}]", file=sys.stderr,
              flush=True)
        code = run_turn(services, session_id, work)
        if code is not None:
            return code
        if refused:
            print(f"treechat: {refused[0]}", file=sys.stderr)
            return 2
        if failed:
            print(f"treechat: {failed[0].error.message}", file=sys.stderr)
            return 1
        if finished:
            print(f"[chat {session_id[:12]} · fused reply {finished[0].node.id[:12]}]",
                  file=sys.stderr)
        return 0
    finally:
        store.close()
