"""An MCP server over stdio that breaks the protocol the ways a broken peer does, written by
hand because the SDK's server never would: `--noise` writes a line that is not JSON before
each answer, `--huge N` answers the `dump` tool with N megabytes of text, `--stderr-mb N`
writes N megabytes on its standard error (in lines of 64 KB) before it reads a request.

It answers `initialize`, `tools/list` and `tools/call` (tools `echo` and `dump`), one JSON
message per line as the stdio transport frames them.
"""

from __future__ import annotations

import argparse
import json
import sys


def _send(message: dict[str, object], noise: bool) -> None:
    out = sys.stdout
    if noise:
        out.write("starting up... not JSON at all\n")
    out.write(json.dumps(message) + "\n")
    out.flush()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--noise", action="store_true")
    parser.add_argument("--huge", type=int, default=0)
    parser.add_argument("--stderr-mb", type=int, default=0)
    args = parser.parse_args()
    line = b"e" * 65_535 + b"\n"
    for _ in range(args.stderr_mb * 16):
        sys.stderr.buffer.write(line)
    sys.stderr.flush()
    tools = [
        {"name": "echo", "description": "Says its text back.",
         "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}},
        {"name": "dump", "description": "A very long answer.",
         "inputSchema": {"type": "object", "properties": {}}},
    ]
    for line in sys.stdin:
        try:
            request = json.loads(line)
        except ValueError:
            continue
        method, ident = request.get("method"), request.get("id")
        if ident is None:  # a notification
            continue
        if method == "initialize":
            result: dict[str, object] = {
                "protocolVersion": request.get("params", {}).get("protocolVersion",
                                                                  "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": tools}
        elif method == "tools/call":
            params = request.get("params", {})
            if params.get("name") == "dump":
                text = "x" * (args.huge * 1024 * 1024)
            else:
                text = str(params.get("arguments", {}).get("text", ""))
            result = {"content": [{"type": "text", "text": text}], "isError": False}
        else:
            _send({"jsonrpc": "2.0", "id": ident,
                   "error": {"code": -32601, "message": f"no method {method}"}}, args.noise)
            continue
        _send({"jsonrpc": "2.0", "id": ident, "result": result}, args.noise)
    return 0


if __name__ == "__main__":
    sys.exit(main())
