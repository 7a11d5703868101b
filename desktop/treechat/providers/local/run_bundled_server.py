"""The script the bundled model's server child runs by path
(`python run_bundled_server.py --model M.gguf --parent-pid P`).

Run by path, this file's folder is the first entry of `sys.path`, so the `bundled_server`
package beside it imports as a top-level package: the child loads the standard library and
llama_cpp, never Treechat or litellm. Frozen, the app's executable imports
`treechat.providers.local.bundled_server.main` instead (`packaging/entry.py`).
"""

from __future__ import annotations

import importlib
import sys


def run() -> int:
    server = importlib.import_module("bundled_server.main")
    return int(server.main(sys.argv[1:]))


if __name__ == "__main__":
    sys.exit(run())
