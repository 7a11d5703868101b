"""A real MCP server for the tests, built with the SDK's server API (`MCPServer`, which mcp 2
calls what mcp 1 called FastMCP). Run as a script:

    python mcp_server.py --name alpha --secret S                 # stdio
    python mcp_server.py --name beta --secret S --http           # streamable HTTP, 127.0.0.1
    python mcp_server.py --name gamma --secret S --sse           # SSE (older servers)

Over HTTP it binds a random port itself and prints one line, `{"port": N}`, when it listens.
`--garbage` prints lines that are not JSON-RPC on stdout before serving; `--pid-file F` writes
the server's pid to F (to check that nothing is left running).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer


def build(name: str, secret: str) -> MCPServer:
    server = MCPServer(name)

    @server.tool(description=f"The secret that only the {name} server knows.")
    def secret_value() -> str:
        return secret

    @server.tool(description="Wait this many seconds, then say so.")
    def slow(seconds: float) -> str:
        time.sleep(seconds)
        return f"waited {seconds} s"

    @server.tool(description="Always fails.")
    def explode() -> str:
        raise RuntimeError(f"{name} exploded on purpose")

    @server.tool(description="The server's process id.")
    def whoami() -> str:
        return str(os.getpid())

    @server.tool(description="Add two integers.")
    def add(a: int, b: int) -> str:
        return str(a + b)

    @server.tool(description="Count lines.")
    def lines(count: int) -> str:
        return "\n".join(f"{name} line {i}" for i in range(1, count + 1))

    @server.tool(description="Count more lines.")
    def more_lines(count: int) -> str:
        return "\n".join(f"{name} more {i}" for i in range(1, count + 1))

    @server.tool(description="Add a tool named `tool_name` that says `says`, and tell the client "
                             "the list changed.")
    async def learn(tool_name: str, says: str, ctx: Context) -> str:
        def learned() -> str:
            return says

        server.add_tool(learned, name=tool_name, description=f"Says {says}.")
        await ctx.notify_tools_changed()  # to a client listening (the 2026-07-28 protocol)
        await ctx.session.send_tool_list_changed()  # to an older one
        return f"learned {tool_name}"

    @server.prompt(description="Ask for a review of a topic.")
    def review(topic: str) -> str:
        return f"Please review {topic} carefully ({name})."

    @server.resource("note://readme", name="readme", mime_type="text/plain")
    def readme() -> str:
        return f"The {name} server's readme."

    return server


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--name", default="alpha")
    parser.add_argument("--secret", default="no-secret")
    parser.add_argument("--http", action="store_true")
    parser.add_argument("--sse", action="store_true", help="the older SSE transport, on /sse")
    parser.add_argument("--garbage", action="store_true")
    parser.add_argument("--pid-file")
    args = parser.parse_args()
    if args.pid_file:
        Path(args.pid_file).write_text(str(os.getpid()))
    print(f"{args.name} starting", file=sys.stderr, flush=True)
    server = build(args.name, args.secret)
    if args.garbage:
        sys.stdout.write("hello, this is not JSON-RPC\n{\"half\": \n")
        sys.stdout.flush()
    if not (args.http or args.sse):
        server.run("stdio")
        return 0
    import anyio
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    app = server.sse_app() if args.sse else server.streamable_http_app()
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv = uvicorn.Server(config)
    print(json.dumps({"port": port}), flush=True)

    async def serve() -> None:
        await uv.serve(sockets=[sock])

    anyio.run(serve)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
