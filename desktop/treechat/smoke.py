"""`treechat --smoke`: checks an installation end to end. The main window paints offscreen, one
turn runs against the bundled model (or a given endpoint), the reply is printed; exit 0, or 1
with what failed."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from . import paths

DEFAULT_PROMPT = "Say hello in one short sentence."
DEFAULT_TIMEOUT = 300.0
PAINT_TIMEOUT = 30.0
PAINTED_MARKER = "treechat-smoke: painted"


class SmokeFailure(Exception):
    """A step of the check failed; the message says which and why."""


@dataclass(frozen=True)
class TurnResult:
    model: str
    reply: str
    seconds: float


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="treechat --smoke",
        description="Check this installation: open the main window offscreen, run one turn, "
        "print the reply. Exits 0 when a reply came back, 1 (saying what failed) otherwise.",
    )
    parser.add_argument("--api-base", help="an OpenAI-compatible server to send the turn to "
                        "(needs --model); default: the bundled offline model")
    parser.add_argument("--model", help="litellm model id, e.g. openai/my-model")
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="the message to send")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT,
                        help="seconds to wait for the reply (default: %(default)s)")
    parser.add_argument("--data-dir", help="store to use (default: $TREECHAT_DATA_DIR, else a "
                        "temporary one that is removed afterwards, so your history is untouched)")
    parser.add_argument("--startup-only", action="store_true",
                        help="stop once the window has painted (start-up timing)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.api_base and not args.model:
        parser.error("--api-base needs --model (the id the server knows the model by)")
    # Offscreen on every system: the check must run where no display is attached (CI, SSH).
    os.environ["QT_QPA_PLATFORM"] = "offscreen"
    try:
        with _data_dir(args.data_dir) as data_dir:
            try:
                return _run(args, data_dir)
            finally:
                _close_log_files()
    except SmokeFailure as exc:
        print(f"treechat --smoke: FAILED: {exc}", file=sys.stderr, flush=True)
        return 1


@contextlib.contextmanager
def _data_dir(explicit: str | None) -> Iterator[Path]:
    if explicit or os.environ.get(paths.DATA_DIR_ENV):
        path = paths.data_dir(explicit)
        path.mkdir(parents=True, exist_ok=True)
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="treechat-smoke-") as tmp:
        yield Path(tmp)


def _log_to(data_dir: Path) -> None:
    """The app's log file in the data dir, and its warnings (a failed request in the
    provider's own words) on stderr too, where the person running the check looks."""
    from .logs import configure_logging

    configure_logging(data_dir)
    echo = logging.StreamHandler(sys.stderr)
    echo.setLevel(logging.WARNING)
    echo.setFormatter(logging.Formatter("treechat --smoke: %(levelname)s %(name)s: %(message)s"))
    logging.getLogger("treechat").addHandler(echo)


def _close_log_files() -> None:
    # A temporary data dir is removed next; an open log file would keep it (on Windows).
    root = logging.getLogger()
    for handler in list(root.handlers):
        if isinstance(handler, logging.FileHandler):
            handler.close()
            root.removeHandler(handler)


def _run(args: argparse.Namespace, data_dir: Path) -> int:
    started = time.perf_counter()
    _log_to(data_dir)
    from .app import create_window
    from .ui.shell.event_loop import close_event_loop, create_event_loop
    from .ui.shell.smoke_window import WindowDidNotPaint, open_painted

    try:
        shown = open_painted(lambda app: create_window(app, data_dir)[0], PAINT_TIMEOUT)
    except WindowDidNotPaint as exc:
        raise SmokeFailure(str(exc)) from exc
    painted_ms = (time.perf_counter() - started) * 1000
    print(f"{PAINTED_MARKER} in {painted_ms:.0f} ms", file=sys.stderr, flush=True)
    if args.startup_only:
        shown.close()
        return 0
    loop = create_event_loop(shown.app)
    try:
        result = loop.run_until_complete(_turn(args, data_dir))
    finally:
        close_event_loop(loop)
        shown.close()
    print(result.reply, flush=True)
    print(f"treechat --smoke: ok: {result.model} replied in {result.seconds:.1f} s "
          f"(window painted in {painted_ms:.0f} ms, store {data_dir})", file=sys.stderr,
          flush=True)
    return 0


async def _turn(args: argparse.Namespace, data_dir: Path) -> TurnResult:
    from .services.bootstrap import build_services
    from .services.models.catalog import BUNDLED_ID
    from .services.turns.events import TextDelta, TurnEvent, TurnFailed, TurnFinished, TurnStarted
    from .store.database import StoreError

    try:
        services = await asyncio.to_thread(
            build_services, data_dir, detect_local_servers=False
        )
    except StoreError as exc:
        raise SmokeFailure(f"opening the store in {data_dir}: {exc}") from exc
    model_used: list[str] = []
    failures: list[str] = []
    finished: list[str] = []
    pieces: list[str] = []

    def on_event(event: TurnEvent) -> None:
        if isinstance(event, TurnStarted):
            model_used.append(event.model)
        elif isinstance(event, TextDelta):
            pieces.append(event.text)
        elif isinstance(event, TurnFailed):
            failures.append(f"{event.error.kind}: {event.error.message}")
        elif isinstance(event, TurnFinished):
            finished.append(event.node.text)

    began = time.perf_counter()
    try:
        session = await services.chat.sessions.create(title="Smoke test")
        await asyncio.wait_for(
            services.chat.send(
                session.id, args.prompt, model=args.model or BUNDLED_ID,
                api_base=args.api_base, on_event=on_event,
            ),
            args.timeout,
        )
    except TimeoutError:
        raise SmokeFailure(f"no reply within {args.timeout:.0f} s") from None
    except Exception as exc:
        raise SmokeFailure(f"the turn raised {type(exc).__name__}: {exc}") from exc
    finally:
        await services.close()
        services.close_store()
    if failures:
        raise SmokeFailure(f"the turn failed: {failures[0]}")
    reply = (finished[0] if finished else "".join(pieces)).strip()
    if not finished:
        raise SmokeFailure("the turn ended without a reply")
    if not reply:
        raise SmokeFailure("the model's reply was empty")
    return TurnResult(model_used[0] if model_used else args.model or BUNDLED_ID, reply,
                      time.perf_counter() - began)
