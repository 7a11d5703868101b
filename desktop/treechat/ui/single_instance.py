"""One window per data folder: the first launch listens on a local socket; a later launch
with the same folder asks it to come to the front and exits instead of opening the store."""

from __future__ import annotations

import getpass
import hashlib
from pathlib import Path

from PySide6.QtCore import QObject, Signal
from PySide6.QtNetwork import QLocalServer, QLocalSocket

ACTIVATE = b"activate\n"
CONNECT_TIMEOUT_MS = 500


def server_name(data_dir: Path) -> str:
    """A socket name private to this user and this data folder."""
    try:
        user = getpass.getuser()
    except Exception:  # no user name in the environment: the folder alone still separates
        user = ""
    digest = hashlib.sha256(f"{user}\0{Path(data_dir).resolve()}".encode()).hexdigest()
    return f"treechat-{digest[:20]}"


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
