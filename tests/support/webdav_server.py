"""A real WebDAV server (wsgidav on cheroot) on 127.0.0.1, a random port, serving a folder,
with a user and password: what a Nextcloud or a NAS is to the sync client."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

USER = "treechat"
PASSWORD = "dav-secret-1234"


class WebDavServer:
    def __init__(self, root: Path) -> None:
        from cheroot import wsgi
        from wsgidav.wsgidav_app import WsgiDAVApp

        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        config: dict[str, Any] = {
            "host": "127.0.0.1",
            "port": 0,
            "provider_mapping": {"/dav": str(root)},
            "http_authenticator": {"domain_controller": None, "accept_basic": True,
                                   "accept_digest": False, "default_to_digest": False},
            "simple_dc": {"user_mapping": {"*": {USER: {"password": PASSWORD}}}},
            "verbose": 0,
            "dir_browser": {"enable": False},
            "logging": {"enable": False, "enable_loggers": []},
            "property_manager": True,
            "lock_storage": True,
        }
        app = WsgiDAVApp(config)
        self._server = wsgi.Server(("127.0.0.1", 0), app, numthreads=4)
        self._server.prepare()
        port = self._server.bind_addr[1]
        self.url = f"http://127.0.0.1:{port}/dav"
        self._thread = threading.Thread(target=self._server.serve, daemon=True,
                                        name="webdav-server")
        self._thread.start()

    def stop(self) -> None:
        self._server.stop()
        self._thread.join(timeout=10)
