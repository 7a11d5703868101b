"""Entry point of the frozen app: the hidden child-process mode, else Treechat's command line."""

from __future__ import annotations

import os
import sys


def _platform_fallback() -> None:
    # Only xcb and offscreen are bundled on Linux; a session that asks for Wayland (or any
    # platform we do not ship) still gets a window through XWayland instead of an abort.
    requested = os.environ.get("QT_QPA_PLATFORM", "")
    if sys.platform.startswith("linux") and requested and not any(
        name in requested for name in ("xcb", "offscreen")
    ):
        os.environ["QT_QPA_PLATFORM"] = f"{requested};xcb"


def main() -> int:
    import multiprocessing

    # The indexing child process (services/retrieval/offload.py) is this executable started
    # again: freeze_support runs its work and exits instead of starting the app.
    multiprocessing.freeze_support()
    from treechat import paths

    if len(sys.argv) > 1 and sys.argv[1] == paths.SERVE_LOCAL_MODEL_FLAG:
        # The bundled model's server: imports llama_cpp only, never the app.
        from treechat.providers.local.bundled_server import main as local_server

        return local_server.main(sys.argv[2:])
    if len(sys.argv) > 1 and sys.argv[1] == "--mcp-guard":
        # The launcher a stdio MCP server runs under (tools/mcp/guard.py): stdlib only.
        from treechat.tools.mcp import guard

        return guard.main(sys.argv[2:])
    _platform_fallback()
    from treechat.cli import main as cli_main

    return cli_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
