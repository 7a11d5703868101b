"""One window per data folder: the first launch listens on a local socket; a later launch
with the same folder asks it to come to the front and exits instead of opening the store.

Qt's network module loads only when needed: on Unix the socket is a file at a known path, so a
launch that finds no file knows nobody is running and starts listening after its window has
painted."""

from __future__ import annotations

import os
import sys
import zlib
from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, Signal

if TYPE_CHECKING:
    from PySide6.QtNetwork import QLocalServer, QLocalSocket

ACTIVATE = b"activate\n"
CONNECT_TIMEOUT_MS = 500


def server_name(data_dir: Path) -> str:
    """The socket for this user and this data folder: on Unix an absolute path in the user's
    runtime folder (or the temp folder, with the user id in the name); on Windows a pipe name
    with the user's name in it."""
    folder = str(Path(data_dir).resolve()).encode()
    digest = f"{zlib.crc32(folder):08x}{zlib.adler32(folder):08x}"
    if sys.platform == "win32":
        user = os.environ.get("USERNAME", "")
        return f"treechat-{user}-{digest}"
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime and os.path.isdir(runtime) and os.access(runtime, os.W_OK):
        return os.path.join(runtime, f"treechat-{digest}")
    temp = os.environ.get("TMPDIR") or "/tmp"
    return os.path.join(temp, f"treechat-{os.getuid()}-{digest}")


def may_be_running(name: str) -> bool:
    """False when no instance can be listening on `name` (no socket file on Unix), so there
    is nobody to hand over to; True when it has to be asked."""
    return not os.path.isabs(name) or os.path.exists(name)


class SingleInstance(QObject):
    """`hand_over()` in a later launch; `listen()` in the first. `activated` fires in the
    first one whenever a later launch hands over."""

    activated = Signal()

    def __init__(self, name: str, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.name = name
        self._server: QLocalServer | None = None

    def hand_over(self) -> bool:
        """True if a running instance took the request (this launch should exit)."""
        if not may_be_running(self.name):
            return False
        from PySide6.QtNetwork import QLocalSocket

        socket = QLocalSocket()
        socket.connectToServer(self.name)
        if not socket.waitForConnected(CONNECT_TIMEOUT_MS):
            return False
        socket.write(ACTIVATE)
        socket.flush()
        socket.waitForBytesWritten(CONNECT_TIMEOUT_MS)
        # wait for the running window to acknowledge, so the hand-over is not lost
        socket.waitForReadyRead(CONNECT_TIMEOUT_MS * 4)
        socket.disconnectFromServer()
        return True

    def listen(self) -> bool:
        from PySide6.QtNetwork import QLocalServer

        server = QLocalServer(self)
        server.setSocketOptions(QLocalServer.SocketOption.UserAccessOption)
        if not server.listen(self.name):
            # a socket file left by a crashed run: nobody answered hand_over(), so remove it
            QLocalServer.removeServer(self.name)
            if not server.listen(self.name):
                return False
        server.newConnection.connect(self._accept)
        self._server = server
        return True

    @property
    def listening(self) -> bool:
        return self._server is not None and self._server.isListening()

    def _accept(self) -> None:
        server = self._server
        if server is None:
            return
        while server.hasPendingConnections():
            socket = server.nextPendingConnection()
            socket.readyRead.connect(lambda s=socket: self._read(s))
            socket.disconnected.connect(socket.deleteLater)
            if socket.bytesAvailable():
                self._read(socket)

    def _read(self, socket: QLocalSocket) -> None:
        data = bytes(socket.readAll().data())
        if ACTIVATE.strip() in data:
            socket.write(b"ok\n")
            socket.flush()
            self.activated.emit()

    def close(self) -> None:
        if self._server is not None:
            self._server.close()
            self._server = None
