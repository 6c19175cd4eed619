"""A real HTTP server on 127.0.0.1 that Apprise's ``json://`` service posts to."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest


class Notifications:
    """Every JSON body received, per path; a path in ``refuse`` answers HTTP 500."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.received: list[tuple[str, dict[str, Any]]] = []
        self.refuse: set[str] = set()
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)

    def url(self, path: str) -> str:
        """The Apprise URL of a JSON webhook at ``path`` on this server."""
        return f"json://127.0.0.1:{self.port}{path}"

    def at(self, path: str) -> list[dict[str, Any]]:
        with self.lock:
            return [body for where, body in self.received if where == path]

    def wait_for(self, path: str, count: int, timeout: float = 120.0) -> list[dict[str, Any]]:
        """The bodies received at ``path`` once there are ``count`` (another process sends)."""
        with self.arrived:
            assert self.arrived.wait_for(
                lambda: sum(where == path for where, _ in self.received) >= count, timeout
            ), f"fewer than {count} notifications at {path} within {timeout} s"
            return [body for where, body in self.received if where == path]


@pytest.fixture
def notifications() -> Iterator[Notifications]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length))
            with state.arrived:
                state.received.append((self.path, body))
                state.arrived.notify_all()
            self.send_response(500 if self.path in state.refuse else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state = Notifications(server.server_address[1])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield state
    server.shutdown()
    server.server_close()
    thread.join()
