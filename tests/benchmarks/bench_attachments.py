"""Attachments: a 20 MB image from drop to ready-to-send (checked, decoded, counted, stored,
downscaled and encoded for the provider) against Pillow doing only the decode and downscale,
with the event loop's longest stall while it runs (the GUI thread in the app); and a chat of
100 images opened and rendered into a request, cold and warm, against the same chat without
them. Images are made here: random pixels, so the PNG is as large as its pixels."""

from __future__ import annotations

import asyncio
import io
import os
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from PIL import Image

from treechat.core.attachments import provider_size, with_attachments
from treechat.providers import llm
from treechat.services.bootstrap import Services, build_services

pytestmark = pytest.mark.bench

RUNS = 5
CHAT_IMAGES = 100
MODEL = "openai/gpt-4o"


def noise_png(path: Path, side: int) -> None:
    im = Image.frombytes("RGB", (side, side), os.urandom(side * side * 3))
    im.save(path, "PNG", compress_level=1)


async def _max_stall(work: Callable[[], object]) -> tuple[float, float]:
    """Run `work` (a coroutine factory) while a 1 ms ticker watches the loop: (elapsed ms,
    longest gap between ticks in ms)."""
    gaps: list[float] = []
    done = asyncio.Event()

    async def tick() -> None:
        last = time.perf_counter()
        while not done.is_set():
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    start = time.perf_counter()
    await work()  # type: ignore[misc]
    elapsed = time.perf_counter() - start
    done.set()
    await ticker
    return elapsed * 1000, max(gaps, default=0.0) * 1000


def pillow_only(path: Path) -> None:
    """The least any attach must do: decode the file and downscale it for the provider."""
    with Image.open(path) as im:
        im.load()
        target = provider_size(im.width, im.height, "openai")
        small = im.resize(target, Image.Resampling.LANCZOS)
        small.save(io.BytesIO(), "JPEG", quality=88)


async def chat_of(services: Services, images: list[Path] | None) -> str:
    chat = services.chat
    session = await chat.sessions.create(title="pictures")
    prepared = []
    for path in images or ():  # one image a message, as sent
        prepared.extend(await chat.attachments.prepare([path]))
        await chat.attachments.save(prepared[-1:])
    refs = chat.attachments.refs(prepared)
    for i in range(CHAT_IMAGES):
        meta = with_attachments({}, [refs[i]]) if refs else None
        await chat.sessions.append_message(session.id, f"picture {i}", metadata=meta)
        await chat.sessions.append_message(session.id, f"a picture of {i}", role="assistant")
    return session.id


async def open_and_render(services: Services, session_id: str) -> tuple[float, float]:
    start = time.perf_counter()
    await services.chat.sessions.view(session_id)
    opened = time.perf_counter() - start
    start = time.perf_counter()
    await services.engine.prepare(session_id, model=MODEL, window=1_000_000, now=time.time())
    rendered = time.perf_counter() - start
    return opened * 1000, rendered * 1000


def test_bench_attachments(tmp_path: Path, bench_report: Callable[..., Path]) -> None:
    big = tmp_path / "big.png"
    noise_png(big, 2600)
    size_mb = big.stat().st_size / 1e6
    assert size_mb > 19
    llm.litellm_module()  # loaded once up front, as the app does at start

    async def run() -> dict[str, float]:
        services = build_services(tmp_path / "data", bundled=False, detect_local_servers=False)
        try:
            chat = services.chat
            attach_ms: list[float] = []
            stall_ms: list[float] = []

            async def attach() -> None:
                (prepared,) = await chat.attachments.prepare([big])
                await chat.attachments.tokens(prepared, "openai")
                await chat.attachments.save([prepared])
                chat.attachments._payloads.clear()  # each run builds the payload afresh
                await chat.attachments.payloads(chat.attachments.refs([prepared]), "openai")

            for _ in range(RUNS):
                ms, stall = await _max_stall(attach)
                attach_ms.append(ms)
                stall_ms.append(stall)
            # the same ticker over an idle loop: what the shared machine alone costs
            _, idle_stall = await _max_stall(lambda: asyncio.sleep(1.0))
            base_ms = []
            for _ in range(RUNS):
                start = time.perf_counter()
                pillow_only(big)
                base_ms.append((time.perf_counter() - start) * 1000)

            small = []
            for i in range(CHAT_IMAGES):
                p = tmp_path / f"p{i}.png"
                noise_png(p, 640)
                small.append(p)
            with_images = await chat_of(services, small)
            plain = await chat_of(services, None)
            open_img, cold = await open_and_render(services, with_images)
            _, warm = await open_and_render(services, with_images)
            open_plain, plain_render = await open_and_render(services, plain)
            return {
                "attach_20mb_image_ms": statistics.median(attach_ms),
                "attach_gui_block_ms": max(stall_ms),
                "attach_idle_loop_stall_ms": idle_stall,
                "attach_pillow_baseline_ms": statistics.median(base_ms),
                "attach_vs_pillow_ratio": statistics.median(attach_ms) / statistics.median(base_ms),
                "attach_image_mb": size_mb,
                "open_chat_100_images_ms": open_img,
                "open_chat_100_plain_ms": open_plain,
                "request_100_images_cold_ms": cold,
                "request_100_images_warm_ms": warm,
                "request_100_plain_ms": plain_render,
            }
        finally:
            await services.close()
            services.close_store()

    figures = asyncio.run(run())
    rows = [
        ("attach 20 MB PNG (prepare, count, store, downscale)", figures["attach_20mb_image_ms"],
         figures["attach_pillow_baseline_ms"], figures["attach_vs_pillow_ratio"]),
        ("longest event-loop stall while attaching (vs idle)", figures["attach_gui_block_ms"],
         figures["attach_idle_loop_stall_ms"], ""),
        ("open a chat of 100 images (vs no images)", figures["open_chat_100_images_ms"],
         figures["open_chat_100_plain_ms"],
         figures["open_chat_100_images_ms"] / max(figures["open_chat_100_plain_ms"], 1e-9)),
        ("its request, cold (vs no images)", figures["request_100_images_cold_ms"],
         figures["request_100_plain_ms"],
         figures["request_100_images_cold_ms"] / max(figures["request_100_plain_ms"], 1e-9)),
        ("its request, warm (vs no images)", figures["request_100_images_warm_ms"],
         figures["request_100_plain_ms"],
         figures["request_100_images_warm_ms"] / max(figures["request_100_plain_ms"], 1e-9)),
    ]
    bench_report("attachments", figures, rows, ("what", "ms", "baseline ms", "ratio"))
    assert figures["attach_20mb_image_ms"] > 0
