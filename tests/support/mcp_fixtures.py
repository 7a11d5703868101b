"""Starting the tests' real MCP servers (`tests/support/mcp_server.py`) over stdio and HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from treechat.tools.mcp.config import ServerConfig

SERVER_SCRIPT = Path(__file__).with_name("mcp_server.py")


def stdio_config(name: str = "alpha", secret: str = "no-secret", *extra: str,
                 **changes: Any) -> ServerConfig:
    """A stdio server run by this interpreter; `extra` are more script options."""
    return ServerConfig(
        name=name,
        transport="stdio",
        command=sys.executable,
        args=(str(SERVER_SCRIPT), "--name", name, "--secret", secret, *extra),
        **changes,
    )


@dataclass
class HttpServer:
    process: subprocess.Popen[str]
    port: int
    sse: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/{'sse' if self.sse else 'mcp'}"

    def config(self, name: str, **changes: Any) -> ServerConfig:
        transport = "sse" if self.sse else "http"
        return ServerConfig(name=name, transport=transport, url=self.url, **changes)

    def kill(self) -> None:
        self.process.kill()
        self.process.wait(10)


@contextmanager
def http_server(
    name: str = "beta", secret: str = "no-secret", *, sse: bool = False
) -> Iterator[HttpServer]:
    """A streamable HTTP (or SSE) server on 127.0.0.1 (a port of its own choosing)."""
    process = subprocess.Popen(
        [sys.executable, str(SERVER_SCRIPT), "--name", name, "--secret", secret,
         "--sse" if sse else "--http"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"the HTTP MCP server exited with {process.wait(10)}")
        yield HttpServer(process, int(json.loads(line)["port"]), sse)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
