"""A server's error answer, read up to a cap.

An error answer (HTTP 4xx or 5xx) is read whole by the OpenAI client before it raises, and
litellm then scans its message for secrets to redact, in Python: a 30 MB error body held
`send` for minutes at 500 MB, and a larger one would be read until memory ran out. What a
person needs of an error is its first lines. litellm builds every request's transport in one
place (`AsyncHTTPHandler.create_async_transport`); `install` gives each transport it builds a
`handle_async_request` that reads an error's body up to `ERROR_BODY_CAP` bytes (decoded, so a
compressed body cannot grow past it either), closes the connection on the rest and hands on
what was read. Successful answers pass untouched: their stream has its own bounds
(`sse_guard`, `deadline`). The method is set on the transport object, not wrapped in a class
of ours, because litellm tells its transports apart by class.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any

import httpx

ERROR_BODY_CAP = 256 * 1024
CUT_MARK = b"\n[the rest of this error answer was not read]"
# Set on a transport whose method was replaced, so a second install does not wrap it twice.
_MARK = "_treechat_error_body_cap"
_BUILDERS = ("create_async_transport", "_create_async_transport")

Send = Callable[[httpx.Request], Awaitable[httpx.Response]]


async def capped_error(response: httpx.Response, cap: int = ERROR_BODY_CAP) -> httpx.Response:
    """`response` as it is when it succeeded, else with at most `cap` bytes of its body
    (decoded) and the connection let go of the rest."""
    if response.status_code < 400:
        return response
    kept = bytearray()
    cut = False
    try:
        async for piece in response.aiter_bytes():
            kept += piece
            if len(kept) > cap:
                cut = True
                break
    except httpx.DecodingError:  # a body that says it is compressed and is not: as far as read
        cut = True
    finally:
        await response.aclose()
    body = bytes(kept[:cap]) + (CUT_MARK if cut else b"")
    headers = [(name, value) for name, value in response.headers.multi_items()
               if name.lower() not in ("content-length", "content-encoding",
                                       "transfer-encoding")]
    return httpx.Response(response.status_code, headers=headers, content=body,
                          request=response.request, extensions=response.extensions)


def cap_errors_of(transport: Any) -> Any:
    """`transport` with its error answers read up to the cap (None passes through)."""
    if transport is None or getattr(transport, _MARK, False):
        return transport
    send: Send = transport.handle_async_request

    @functools.wraps(send)
    async def handle_async_request(request: httpx.Request) -> httpx.Response:
        return await capped_error(await send(request))

    transport.handle_async_request = handle_async_request
    setattr(transport, _MARK, True)
    return transport


def install(handler: type | None) -> None:
    """Cap the error answers of every transport `handler` (litellm's `AsyncHTTPHandler`)
    builds; idempotent; nothing happens when a later litellm moved the builder."""
    if handler is None:
        return
    for name in _BUILDERS:
        builder = handler.__dict__.get(name)
        if not isinstance(builder, staticmethod) or getattr(builder.__func__, _MARK, False):
            continue
        build = builder.__func__

        @functools.wraps(build)
        def capped(*args: Any, _build: Callable[..., Any] = build, **kwargs: Any) -> Any:
            return cap_errors_of(_build(*args, **kwargs))

        setattr(capped, _MARK, True)
        setattr(handler, name, staticmethod(capped))
