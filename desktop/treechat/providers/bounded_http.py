"""A server's answer read with a cap on its bytes and a deadline on the whole exchange.

httpx bounds each wait for a byte (its read timeout) but not how many bytes come nor how long
they keep coming: a server that streams a model list forever would be read until memory runs
out. `fetch` streams the body through `core.bounded_read.ByteBudget` and hands back an
ordinary `httpx.Response` holding what was read, or raises `ReadLimitError` naming the bound.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator, Mapping
from types import ModuleType
from typing import Any

import httpx

from ..core.bounded_read import MB, Bounds, ByteBudget, ReadLimitError

# A model list, a server's /props, a hub's metadata: small JSON answers.
METADATA_BOUNDS = Bounds(cap=8 * MB, deadline=30.0)


async def fetch(
    client: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    what: str,
    bounds: Bounds = METADATA_BOUNDS,
    headers: Mapping[str, str] | None = None,
    json: Any = None,
) -> httpx.Response:
    """`method url` with the body read within `bounds` (the deadline covers connecting,
    the headers and the whole body). httpx's own errors pass through unchanged."""
    loop = asyncio.get_running_loop()
    budget = ByteBudget(bounds, what, loop.time())
    request = client.build_request(method, url, headers=dict(headers or {}), json=json)
    try:
        async with asyncio.timeout(bounds.deadline):
            response = await client.send(request, stream=True)
            try:
                parts: list[bytes] = []
                # a declared length over the cap is refused before a byte of the body is read
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > bounds.cap:
                    budget.add(int(declared), loop.time())
                async for piece in response.aiter_bytes():
                    budget.add(len(piece), loop.time())
                    parts.append(piece)
            finally:
                await response.aclose()
    except TimeoutError:
        raise ReadLimitError(
            f"{what} took longer than {bounds.deadline:g} s to answer (read "
            f"{budget.read:,} bytes by then)",
            "deadline",
            budget.read,
        ) from None
    return httpx.Response(
        response.status_code,
        headers=[(k, v) for k, v in response.headers.items()
                 if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")],
        content=b"".join(parts),
        request=request,
    )


# --- a client's transport whose answers are read within bounds ---------------------------

BoundsFor = Callable[[Any, Any], "Bounds | None"]  # (request, response) -> bounds, or None


def bounded_transport(http: ModuleType, inner: Any, bounds_for: BoundsFor) -> Any:
    """A synchronous transport of the httpx-like module `http` (httpx, or huggingface_hub's
    httpx2: the same API under another name) around `inner`, for a client whose calls this
    code does not make itself (webdav4's, huggingface_hub's). Each answer's body is read
    within `bounds_for(request, response)` (None: as it comes), raising `ReadLimitError`
    past them. Such requests ask for the body uncompressed, and one compressed all the same
    is refused: a cap on the bytes received would not bound it once unpacked."""

    class Stream(http.SyncByteStream):  # type: ignore[misc, name-defined]
        def __init__(self, stream: Any, bounds: Bounds, what: str) -> None:
            self._stream = stream
            self._bounds = bounds
            self._what = what

        def __iter__(self) -> Iterator[bytes]:
            budget = ByteBudget(self._bounds, self._what, time.monotonic())
            for piece in self._stream:
                budget.add(len(piece), time.monotonic())
                yield piece

        def close(self) -> None:
            self._stream.close()

    class Transport(http.BaseTransport):  # type: ignore[misc, name-defined]
        def handle_request(self, request: Any) -> Any:
            if bounds_for(request, None) is not None:
                request.headers["Accept-Encoding"] = "identity"
            response = inner.handle_request(request)
            bounds = bounds_for(request, response)
            if bounds is None:
                return response
            what = f"{request.url.host}: the answer to {request.method} {request.url.path}"
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                response.close()
                raise ReadLimitError(
                    f"{what} came compressed ({encoding}), though asked not to", "cap", 0)
            response.stream = Stream(response.stream, bounds, what)
            return response

        def close(self) -> None:
            inner.close()

    return Transport()
