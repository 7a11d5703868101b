"""`treechat models search|pull|rm|library`: the model library from the command line (the
same service the window's library dialog uses)."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any

from . import paths

SUBCOMMANDS = ("search", "pull", "rm", "library")


def add_subcommands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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


def add_models_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("models", help="the model library: search, pull, rm, library")
    p.add_argument("--json", action="store_true")
    add_subcommands(p.add_subparsers(dest="models_command", metavar="ACTION"))


def cmd_models(args: argparse.Namespace) -> int:
    if getattr(args, "models_command", None) is None:
        args.models_command = "library"
    return run(args)


def models_dir(args: argparse.Namespace) -> Path:
    return paths.data_dir(getattr(args, "data_dir", None)) / "models"


def run(args: argparse.Namespace) -> int:
    from .providers.model_library import LibraryError, ModelLibrary
    from .services.models.model_library import ModelLibraryService

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


async def _search(service: Any, args: argparse.Namespace) -> int:
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


async def _pull(service: Any, args: argparse.Namespace) -> int:
    from .providers.model_library import DownloadStopped, LibraryError

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
        print(f"downloaded {model.name} ({model.size / 1e6:,.0f} MB, sha256 {model.sha256[:12]}…) "
              f"to {model.path}")
    return 0


async def _resolve(service: Any, repo: str, file: str | None) -> tuple[str, str]:
    from .providers.model_library import LibraryError

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


async def _library(service: Any, args: argparse.Namespace) -> int:
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
