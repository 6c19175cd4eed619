"""A TCP forwarder in front of a real server that can take the server away: every connection is
cut and new ones are reset until it is restored. What a broker outage looks like to a client."""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
from types import TracebackType


class Proxy:
    """Forwards 127.0.0.1:``port`` (chosen free) to 127.0.0.1:``target``."""

    def __init__(self, target: int) -> None:
        self.target = target
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._up = threading.Event()
        self._up.set()
        self._lock = threading.Lock()
        self._open: set[socket.socket] = set()
        self.cuts = 0
        self._accepting = threading.Thread(target=self._accept, name="proxy-accept", daemon=True)
        self._accepting.start()

    def cut(self) -> None:
        """Drop every connection now; new ones are reset until :meth:`restore`."""
        self.cuts += 1
        self._drop()

    def _drop(self) -> None:
        with self._lock:
            self._up.clear()
            for sock in self._open:
                _reset(sock)
            self._open.clear()

    def restore(self) -> None:
        """Forward again."""
        self._up.set()

    def close(self) -> None:
        self._listener.close()
        self._drop()

    def __enter__(self) -> Proxy:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            if not self._up.is_set():
                _reset(client)
                continue
            try:
                server = socket.create_connection(("127.0.0.1", self.target), timeout=5)
            except OSError:
                _reset(client)
                continue
            server.settimeout(None)
            with self._lock:
                if not self._up.is_set():
                    _reset(client)
                    _reset(server)
                    continue
                self._open.update((client, server))
            for source, sink in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while data := source.recv(65536):
                sink.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)


def _reset(sock: socket.socket) -> None:
    # SO_LINGER 0: the peer gets a reset, as from a server that went away. The shutdown wakes
    # a pump blocked reading it: a close alone would wait for that read to end.
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        sock.close()
