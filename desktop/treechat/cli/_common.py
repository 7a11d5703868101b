"""What every `treechat` subcommand shares: the store opened (its damage said once), a session
found from what the user typed, bad input and failed stores answered in one line, and the
usage row the spend tables print."""

from __future__ import annotations

import argparse
import errno
import os
import sys
from collections.abc import Callable
from pathlib import Path

from .. import paths

# The window's start loads this module (and nothing else of the command line's), so it
# stays within what that start loads anyway: not even `typing` (the names below are for the
# type checker only); the store and the services (DuckDB and more) are imported inside the
# functions that use them.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import TypeAlias

    from ..core.model import Session
    from ..store.database import Store
    from ..store.usage import LedgerRow, SpendRow

    UsageFigures: TypeAlias = LedgerRow | SpendRow  # one row of a spend table

Subcommands: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"
Command = Callable[[argparse.Namespace], int]


class CliInputError(ValueError):
    """Something the user typed cannot be used; the message says what and how to fix it."""


def add_command(
    sub: Subcommands, name: str, run: Command, *, help: str, description: str | None = None
) -> argparse.ArgumentParser:
    """A subcommand's parser that runs `run` when chosen."""
    parser = sub.add_parser(name, help=help, description=description)
    parser.set_defaults(handler=run)
    return parser


def run_command(args: argparse.Namespace) -> int:
    """Run the subcommand its parser chose; store and lookup failures become one line."""
    from ..core.model import GraphError
    from ..store.database import StoreDamagedError, StoreError

    handler: Command = args.handler
    try:
        return handler(args)
    except StoreError as exc:
        if isinstance(exc, StoreDamagedError) and _damage_said:
            # the store's damage was said when it opened: say only that it stopped this
            print("treechat: stopped here: the damaged part of the store cannot be read",
                  file=sys.stderr)
        else:
            print(f"treechat: {exc}", file=sys.stderr)
        return 2
    except LookupError as exc:
        print(f"treechat: {exc.args[0] if exc.args else exc}", file=sys.stderr)
        return 2
    except (CliInputError, GraphError) as exc:  # an ambiguous session prefix, bad input
        print(f"treechat: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # e.g. `export -o` into a folder that does not exist
        where = f" {exc.filename}" if exc.filename else ""
        if exc.errno == errno.ENOSPC:
            at = f" writing{where}" if where else ""
            print(f"treechat: the disk is full (No space left on device){at}; free some "
                  "space and try again", file=sys.stderr)
        else:
            print(f"treechat: cannot use{where}: {exc.strerror or exc}", file=sys.stderr)
        return 2


def fail(message: str, code: int = 2) -> int:
    """Say what went wrong in one line; the exit status to return."""
    print(f"treechat: {message}", file=sys.stderr)
    return code


def data_dir(args: argparse.Namespace) -> Path:
    return paths.data_dir(getattr(args, "data_dir", None))


def store_path(args: argparse.Namespace) -> Path:
    from ..store.database import default_store_path

    return default_store_path(data_dir(args))


def open_store(args: argparse.Namespace) -> Store:
    """The store of `--data-dir`, recovered after a crash; a damaged one opens with a warning
    first, and what can be read is shown."""
    from ..services.store_life.recovery import open_and_recover
    from ..store.database import damaged_message
    from ..store.opening import COMMAND_MEMORY_LIMIT

    store = open_and_recover(store_path(args), memory_limit=COMMAND_MEMORY_LIMIT)
    if store.damage is not None:
        print(f"treechat: {damaged_message(store.path, store.damage.problem)}", file=sys.stderr)
        _damage_said.add(store.path)
    return store


# Stores whose damage this command has already described (once is enough).
_damage_said: set[Path] = set()


def find_session(store: Store, ref: str) -> Session:
    """The session a user named by id, unique id prefix or exact title."""
    if not ref.strip():
        raise LookupError("no chat named: give its id, a unique id prefix or its title")
    session = store.call(lambda r: r.find_session(ref))
    if session is None:
        raise LookupError(f"no chat matches {ref!r} (see `treechat sessions`)")
    return session


def find_session_id(store: Store, ref: str) -> str:
    return find_session(store, ref).id


def result_limit(args: argparse.Namespace) -> int:
    """`--limit`, which must be at least 1."""
    if args.limit < 1:
        raise LookupError("--limit must be at least 1")
    return int(args.limit)


def count(n: int, word: str) -> str:
    """`1 branch`, `2 branches`."""
    plural = word + ("es" if word.endswith("ch") else "s")
    return f"{n} {word if n == 1 else plural}"


def usage_record(row: UsageFigures) -> dict[str, float]:
    """A spend row's figures as every `--json` table prints them."""
    return {
        "requests": row.requests,
        "input_tokens": row.input_tokens,
        "cache_read": row.cache_read,
        "cache_write": row.cache_write,
        "output_tokens": row.output_tokens,
        "cost_usd": row.cost_usd,
        "unpriced_requests": row.unpriced_requests,
    }


def leave_now(code: int) -> None:
    """End the process now: streams flushed, no interpreter shutdown (a daemon thread halfway
    through an import or a C++ call can hang or abort it)."""
    import contextlib  # here, not at the top: the window's start does not load it

    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)
