"""A loopback server speaking the Hugging Face hub routes `huggingface_hub` uses to search,
describe a repository (with LFS sha256 and sizes) and serve a file (with Range), so model
downloads are tested over real HTTP with `HF_ENDPOINT` pointed here.

Run as a script (`python hub_server.py --repo R --file F --path P [--rate B]`) it prints its
port and serves until killed, for tests that kill the downloading process mid-transfer.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"


@dataclass
class HubFileEntry:
    path: Path
    sha256: str
    size: int


@dataclass
class Hub:
    repos: dict[str, dict[str, HubFileEntry]] = field(default_factory=dict)
    # bytes per second for file bodies (0: as fast as possible)
    rate: int = 0
    # serve these bytes instead of the file's (a tampered mirror)
    tamper: bool = False
    # after the file's bytes, more and more with no end and no length (a broken mirror)
    endless: bool = False
    requests: list[tuple[str, str, str | None]] = field(default_factory=list)

    def add(self, repo: str, name: str, path: Path, sha256: str | None = None) -> None:
        digest = sha256 or sha256_of(path)
        self.repos.setdefault(repo, {})[name] = HubFileEntry(path, digest, path.stat().st_size)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


class _Handler(BaseHTTPRequestHandler):
    hub: Hub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    def _route(self, head: bool) -> None:
        url = urlparse(self.path)
        self.hub.requests.append((self.command, url.path, self.headers.get("Range")))
        query = parse_qs(url.query)
        if url.path == "/api/models":
            self._json(self._search(query))
            return
        match = re.fullmatch(r"/api/models/(.+?)(?:/revision/[^/]+)?", url.path)
        if match:
            repo = unquote(match.group(1))
            if repo not in self.hub.repos:
                self._json({"error": "Repository not found"}, 404)
                return
            self._json(self._info(repo))
            return
        match = re.fullmatch(r"/(.+)/resolve/([^/]+)/(.+)", url.path)
        if match:
            self._file(unquote(match.group(1)), unquote(match.group(3)), head)
            return
        self._json({"error": "not found"}, 404)

    def _search(self, query: dict[str, list[str]]) -> list[dict[str, Any]]:
        words = (query.get("search") or [""])[0].lower()
        return [
            {"id": repo, "modelId": repo, "downloads": 1000 - i, "likes": 7,
             "tags": ["gguf", "license:apache-2.0"], "private": False}
            for i, repo in enumerate(sorted(self.hub.repos))
            if words in repo.lower()
        ]

    def _info(self, repo: str) -> dict[str, Any]:
        return {
            "id": repo, "modelId": repo, "sha": COMMIT, "private": False,
            "tags": ["gguf", "license:apache-2.0"], "downloads": 1000, "likes": 7,
            "siblings": [
                {"rfilename": name, "size": entry.size, "blobId": "0" * 40,
                 "lfs": {"sha256": entry.sha256, "size": entry.size, "pointerSize": 134}}
                for name, entry in sorted(self.hub.repos[repo].items())
            ] + [{"rfilename": "README.md", "size": 12, "blobId": "1" * 40}],
        }

    def _file(self, repo: str, name: str, head: bool) -> None:
        entry = self.hub.repos.get(repo, {}).get(name)
        if entry is None:
            self._json({"error": "Entry not found"}, 404)
            return
        start = 0
        status = 200
        header = self.headers.get("Range")
        if header:
            match = re.fullmatch(r"bytes=(\d+)-(\d*)", header.strip())
            if match:
                start = int(match.group(1))
                status = 206
        length = entry.size - start
        self.send_response(status)
        if self.hub.endless:
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Content-Length", str(length))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", f'"{entry.sha256}"')
        self.send_header("X-Linked-Etag", f'"{entry.sha256}"')
        self.send_header("X-Linked-Size", str(entry.size))
        self.send_header("X-Repo-Commit", COMMIT)
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{entry.size - 1}/{entry.size}")
        self.end_headers()
        if head:
            return
        with entry.path.open("rb") as f:
            f.seek(start)
            chunk = 64 * 1024 if self.hub.rate == 0 else max(1024, self.hub.rate // 20)
            began = time.monotonic()
            sent = 0
            while block := f.read(chunk):
                if self.hub.tamper:
                    block = bytes(b ^ 0x5A for b in block)
                try:
                    self.wfile.write(block)
                except (BrokenPipeError, ConnectionResetError):
                    return
                sent += len(block)
                if self.hub.rate:
                    ahead = sent / self.hub.rate - (time.monotonic() - began)
                    if ahead > 0:
                        time.sleep(ahead)
            extra = b"\x00" * (64 * 1024)
            while self.hub.endless:
                try:
                    self.wfile.write(extra)
                except (BrokenPipeError, ConnectionResetError):
                    return

    def _json(self, body: Any, status: int = 200) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class HubServer:
    def __init__(self, hub: Hub) -> None:
        handler = type("Handler", (_Handler,), {"hub": hub})
        self.hub = hub
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> HubServer:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repo", required=True)
    parser.add_argument("--file", required=True)
    parser.add_argument("--path", required=True, type=Path)
    parser.add_argument("--rate", type=int, default=0)
    args = parser.parse_args()
    hub = Hub(rate=args.rate)
    hub.add(args.repo, args.file, args.path)
    with HubServer(hub) as server:
        print(json.dumps({"url": server.url}), flush=True)
        sys.stdin.read()  # until the test closes our stdin or kills us
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
