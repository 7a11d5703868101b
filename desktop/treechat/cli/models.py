"""`treechat models [list]` (every model of every connection, with its window and price) and
`treechat models search|pull|rm|library` (the model library the window's dialog shows)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._common import Subcommands, add_command, data_dir

if TYPE_CHECKING:
    from ..services.models.model_library import ModelLibraryService

# The services are imported inside the commands: this module is loaded with the parser
# (`--help` builds it), and they would load DuckDB, the providers and more.


def add_parser(sub: Subcommands) -> None:
    p = add_command(sub, "models", cmd_models,
                    help="the model library: search, pull, rm, library")
    p.add_argument("--json", action="store_true")
    actions = p.add_subparsers(dest="models_command", metavar="ACTION")
    _add_library_actions(actions)
    q = actions.add_parser("list", help="every model of every connection, with its window, "
                           "price and reachability (the default)")
    q.add_argument("--json", action="store_true")
    q.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _add_library_actions(sub: Subcommands) -> None:
    p = sub.add_parser("search", help="find GGUF models on the Hugging Face hub "
                       "(HF_ENDPOINT is honoured)")
    p.add_argument("query")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("pull", help="download a GGUF model (resumes a stopped download)")
    p.add_argument("repo", help="hub repository, e.g. Qwen/Qwen2.5-1.5B-Instruct-GGUF, or a "
                   "recommended model's id")
    p.add_argument("file", nargs="?", help="the .gguf file (default: the recommended one, or "
                   "the repository's Q4_K_M file)")
    p.add_argument("--json", action="store_true")

    p = sub.add_parser("rm", help="remove a downloaded model and free its disk space")
    p.add_argument("name")

    p = sub.add_parser("library", help="recommended models, downloaded models and downloads "
                       "that stopped part way")
    p.add_argument("--json", action="store_true")
    for parser in sub.choices.values():
        # `treechat models pull R --data-dir D`, like every other command (SUPPRESS keeps a
        # value given before the command)
        parser.add_argument("--data-dir", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def cmd_models(args: argparse.Namespace) -> int:
    """Bare `models` or `models list` lists every model of every connection; the other
    actions are the model library's."""
    if args.models_command in (None, "list"):
        return cmd_models_list(args)
    return cmd_library(args)


def models_dir(args: argparse.Namespace) -> Path:
    return data_dir(args) / "models"


def cmd_library(args: argparse.Namespace) -> int:
    from ..providers.model_library import LibraryError, ModelLibrary
    from ..services.models.model_library import ModelLibraryService

    service = ModelLibraryService(ModelLibrary(models_dir(args)))
    action = args.models_command
    try:
        if action == "search":
            return asyncio.run(_search(service, args))
        if action == "pull":
            return asyncio.run(_pull(service, args))
        if action == "rm":
            freed = asyncio.run(service.remove(args.name))
            print(f"removed {args.name} ({freed / 1e6:,.0f} MB freed); chats made with it are kept")
            return 0
        if action == "library":
            return asyncio.run(_library(service, args))
    except LibraryError as exc:
        print(f"treechat: {exc}", file=sys.stderr)
        return 1
    raise AssertionError(action)


async def _search(service: ModelLibraryService, args: argparse.Namespace) -> int:
    words = args.query.lower()
    picks = [r for r in await service.recommended()
             if words in f"{r.model.title} {r.model.repo} {r.model.id}".lower()]
    found = await service.search(args.query)
    if args.json:
        print(json.dumps({"recommended": [asdict(r.model) for r in picks],
                          "hub": [asdict(r) for r in found]}, indent=1))
        return 0
    for r in picks:
        print(f"★ {r.model.id:<28} {r.model.repo}  {r.model.size_bytes / 1e9:.1f} GB  "
              f"{r.model.ram_gb:g} GB RAM  {r.model.license}")
    for repo in found:
        print(f"  {repo.repo:<60} {repo.downloads:>9,} downloads  {repo.license or ''}")
    if not picks and not found:
        print(f"no GGUF models match {args.query!r}")
    return 0


async def _pull(service: ModelLibraryService, args: argparse.Namespace) -> int:
    from ..providers.model_library import DownloadStopped, LibraryError

    repo, file = await _resolve(service, args.repo, args.file)
    tty = sys.stderr.isatty()
    last = [0.0]

    def show(p: Any) -> None:
        if not tty and p.fraction - last[0] < 0.1 and p.done < p.total:
            return
        last[0] = p.fraction
        left = f", {p.seconds_left:.0f} s left" if p.seconds_left is not None else ""
        line = (f"{file}: {p.done / 1e6:,.0f} / {p.total / 1e6:,.0f} MB "
                f"({p.fraction:.0%}, {p.bytes_per_second / 1e6:.1f} MB/s{left})")
        print(("\r" + line) if tty else line, end="" if tty else "\n", file=sys.stderr,
              flush=True)

    job = service.download(repo, file, on_progress=show)
    try:
        model = await job.done()
    except asyncio.CancelledError:
        job.pause()
        raise
    except DownloadStopped:
        print("\ndownload paused; run the same command again to resume", file=sys.stderr)
        return 130
    except KeyboardInterrupt:
        job.pause()
        print("\ndownload paused; run the same command again to resume", file=sys.stderr)
        return 130
    except LibraryError:
        if tty:
            print(file=sys.stderr)
        raise
    if tty:
        print(file=sys.stderr)
    if args.json:
        print(json.dumps(asdict(model), indent=1))
    else:
        digest = (model.sha256 or "")[:12]
        print(f"downloaded {model.name} ({model.size / 1e6:,.0f} MB, sha256 {digest}…) "
              f"to {model.path}")
    return 0


async def _resolve(service: ModelLibraryService, repo: str, file: str | None) -> tuple[str, str]:
    from ..providers.model_library import LibraryError

    for r in await service.recommended():
        if repo in (r.model.id, r.model.repo) and (file is None or file == r.model.file):
            return r.model.repo, r.model.file
    if file is not None:
        return repo, file
    files = await service.files(repo)
    if not files:
        raise LibraryError(f"{repo} has no .gguf files")
    if len(files) == 1:
        return repo, files[0].file
    preferred = [f for f in files if "q4_k_m" in f.file.lower()]
    if len(preferred) == 1:
        return repo, preferred[0].file
    names = ", ".join(f.file for f in files[:12])
    raise LibraryError(f"{repo} has several .gguf files; name one: {names}")


async def _library(service: ModelLibraryService, args: argparse.Namespace) -> int:
    picks = await service.recommended()
    installed = await service.installed()
    partial = await service.partial()
    if args.json:
        print(json.dumps({
            "recommended": [{**asdict(r.model), "installed": r.installed,
                             "fits_ram": r.fits_ram} for r in picks],
            "installed": [asdict(m) for m in installed],
            "partial": [asdict(p) for p in partial],
        }, indent=1))
        return 0
    print("Recommended:")
    for r in picks:
        mark = "installed" if r.installed else ("" if r.fits_ram else "needs more RAM")
        print(f"  {r.model.id:<26} {r.model.size_bytes / 1e9:4.1f} GB  {r.model.ram_gb:g} GB RAM  "
              f"{r.model.license:<11} {mark}")
    print("Downloaded:" if installed else "Downloaded: none")
    for m in installed:
        print(f"  {m.name:<26} {m.size / 1e6:,.0f} MB  window {m.context_length or '?'}  {m.path}")
    for p in partial:
        print(f"  stopped: {p.repo}/{p.file} at {p.done / 1e6:,.0f} of {p.size / 1e6:,.0f} MB "
              "(`treechat models pull` resumes it)")
    return 0


def cmd_models_list(args: argparse.Namespace) -> int:
    """Every model of every connection, with its window, price and reachability."""
    from ..services.bootstrap import build_services

    services = build_services(data_dir(args))

    async def run() -> Any:
        try:
            return await services.models.refresh()
        finally:
            await services.close()

    try:
        groups = asyncio.run(run())
    finally:
        services.close_store()
    if args.json:
        print(json.dumps([_group_record(g) for g in groups], indent=2, ensure_ascii=False))
        return 0
    if not any(g.models for g in groups):
        print("No models yet. Add a connection with `treechat connections add`.")
        return 0
    for g in groups:
        mark = "" if g.state in ("ready", "detected") else f" — {g.state}"
        detected = " (detected)" if g.detected and g.state == "detected" else ""
        print(f"{g.label}{detected}{mark}" + (f": {g.reason}" if g.reason else ""))
        for c in g.models:
            print(f"  {c.id:<44} {_window(c):>16}  {_price(c, services.models.is_local(c.id))}")
    return 0


def _window(choice: Any) -> str:
    if not choice.window:
        return "window ?"
    return f"{choice.window:,}" + (" (estimated)" if choice.window_estimated else "")


def _price(choice: Any, local: bool = False) -> str:
    """As the window says it: a model on this computer is free, a hosted one litellm has no
    price for is unpriced."""
    if local:
        return "free"
    if choice.price_in is None:
        return "unpriced"
    return f"${choice.price_in:g} in / ${choice.price_out:g} out per M"


def _group_record(g: Any) -> dict[str, Any]:
    return {
        "connection": g.connection,
        "label": g.label,
        "kind": g.kind,
        "state": g.state,
        "detected": g.detected,
        "reason": g.reason or None,
        "models": [
            {
                "address": c.id,
                "name": c.name or c.id,
                "display_name": c.label,
                "window": c.window,
                "window_estimated": c.window_estimated,
                "price_in_per_million": c.price_in,
                "price_out_per_million": c.price_out,
                "available": c.available,
            }
            for c in g.models
        ],
    }
