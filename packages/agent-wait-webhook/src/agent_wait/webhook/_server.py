"""The webhook entry point's built-in HTTP server (the standard library's, bounded).

Anything that can connect may send anything, so the server bounds what one peer can hold: a
request body is at most ``max_body`` bytes however it is framed (refused with 413 before the
rest is read), a request must arrive in full (request line, headers and body) within
``read_timeout`` seconds, and at most ``max_connections`` connections are served at once (the
next ones are answered 503 and closed, which a sender retries).
"""

from __future__ import annotations

import io
import json
import logging
import re
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from contextlib import suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_wait.core import log_safe

logger = logging.getLogger("agent_wait.webhook.entry")

Reply = tuple[int, dict[str, Any]]
Waiter = Callable[[int, dict[str, Any]], None]
"""Answers one held HTTP request; called from whichever thread settled its message."""
Admit = Callable[[bytes, dict[str, str], Waiter], Reply | None]
"""Verifies and holds a request: its reply now, or None when the waiter will get it."""

_MAX_LINE = 1024
"""Longest chunk-size or trailer line of a chunked body."""
_MAX_TRAILERS = 32
_CHUNK_SIZE = re.compile(rb"[0-9A-Fa-f]{1,16}")


class _Refused(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class _DeadlineReader(io.RawIOBase):
    """A socket's input where every read waits only for what is left of the request's time."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._deadline = time.monotonic()

    def restart(self, seconds: float) -> None:
        self._deadline = time.monotonic() + seconds

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request did not arrive in time")
        self._connection.settimeout(left)
        return self._connection.recv_into(buffer)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        admit: Admit,
        *,
        max_body: int,
        read_timeout: float,
        max_connections: int,
    ) -> None:
        super().__init__(address, _Handler)
        self.admit = admit
        self.max_body = max_body
        self.read_timeout = read_timeout
        self._slots = threading.BoundedSemaphore(max_connections)

    def process_request(self, request: Any, client_address: Any) -> None:
        if not self._slots.acquire(blocking=False):
            _refuse_busy(request)
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


def _refuse_busy(request: socket.socket) -> None:
    # Written from the accepting thread: a few bytes into a fresh socket's empty buffer, never
    # waiting on the peer.
    data = json.dumps({"error": "the host is serving as many connections as it takes; retry"})
    with_headers = (
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\n"
        f"content-length: {len(data)}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{data}"
    )
    request.setblocking(False)
    with suppress(OSError):  # the peer is gone or not reading: closing is all that is left
        request.sendall(with_headers.encode())


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server  # pyright: ignore[reportIncompatibleVariableOverride]

    def setup(self) -> None:
        super().setup()
        self._input = _DeadlineReader(self.connection)
        self.rfile = io.BufferedReader(self._input)

    def handle_one_request(self) -> None:
        # One deadline for each request, and for an idle connection's next one.
        self._input.restart(self.server.read_timeout)
        super().handle_one_request()

    def handle_expect_100(self) -> bool:
        # Refuse a body that cannot be taken before the client sends it.
        try:
            self._framing()
        except _Refused as refused:
            self._refuse(refused)
            return False
        return super().handle_expect_100()

    def do_POST(self) -> None:
        try:
            body = self._body()
        except _Refused as refused:
            self._refuse(refused)
            return
        done: Future[Reply] = Future()

        def answer(status: int, reply: dict[str, Any]) -> None:
            if not done.done():
                done.set_result((status, reply))

        held = self.server.admit(body, dict(self.headers.items()), answer)
        self._reply(*(held or done.result()))

    def _framing(self) -> int | None:
        """The body's length, or None when it comes in chunks (read and counted as they come)."""
        codings = self.headers.get_all("transfer-encoding") or []
        lengths = {text.strip() for text in self.headers.get_all("content-length") or []}
        if codings:
            if lengths:
                raise _Refused(400, "both Transfer-Encoding and Content-Length")
            named = [c.strip().lower() for c in ",".join(codings).split(",")]
            if named != ["chunked"]:
                raise _Refused(
                    400, f"Transfer-Encoding: expected chunked, got {', '.join(named)[:80]!r}"
                )
            return None
        if len(lengths) > 1:
            raise _Refused(400, f"Content-Length: several values, got {sorted(lengths)!r}"[:200])
        text = lengths.pop() if lengths else "0"
        if not (text.isascii() and text.isdigit()):
            raise _Refused(400, f"Content-Length: expected a number of bytes, got {text[:40]!r}")
        if len(text) > len(str(self.server.max_body)) or int(text) > self.server.max_body:
            raise _Refused(413, f"the body is larger than {self.server.max_body} bytes")
        return int(text)

    def _body(self) -> bytes:
        length = self._framing()
        if length is None:
            return self._chunked()
        body = self.rfile.read(length)
        if len(body) < length:
            raise _Refused(400, "the body ended before its Content-Length")
        return body

    def _chunked(self) -> bytes:
        body = bytearray()
        while True:
            size_text = self._line("a chunk size").split(b";", 1)[0].strip()
            if not _CHUNK_SIZE.fullmatch(size_text):
                raise _Refused(400, f"chunk size: expected hexadecimal digits, got {size_text!r}")
            size = int(size_text, 16)
            if size == 0:
                break
            if len(body) + size > self.server.max_body:
                raise _Refused(413, f"the body is larger than {self.server.max_body} bytes")
            chunk = self.rfile.read(size)
            if len(chunk) < size:
                raise _Refused(400, "the body ended inside a chunk")
            body += chunk
            if self._line("the end of a chunk") not in (b"\r\n", b"\n"):
                raise _Refused(400, "a chunk is longer than its size")
        for _ in range(_MAX_TRAILERS):
            if self._line("a trailer") in (b"\r\n", b"\n"):
                return bytes(body)
        raise _Refused(400, f"more than {_MAX_TRAILERS} trailer lines")

    def _line(self, what: str) -> bytes:
        line = self.rfile.readline(_MAX_LINE + 1)
        if not line.endswith(b"\n"):
            cut = f"longer than {_MAX_LINE} bytes" if len(line) > _MAX_LINE else "cut off"
            raise _Refused(400, f"{what} line is {cut}")
        return line

    def _refuse(self, refused: _Refused) -> None:
        # The rest of the body is not read, so the connection cannot carry another request.
        self.close_connection = True
        self._reply(refused.status, {"error": refused.message})

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode()
        # A reply the peer does not take in time is given up like a request that did not arrive.
        self.connection.settimeout(self.server.read_timeout)
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        if self.close_connection:
            self.send_header("connection", "close")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("%s %s", self.address_string(), log_safe(format % args))


def serve(
    host: str,
    port: int,
    admit: Admit,
    *,
    max_body: int,
    read_timeout: float,
    max_connections: int,
) -> tuple[ThreadingHTTPServer, threading.Thread]:
    """Serve ``admit`` on ``host:port`` in a daemon thread; the server and its thread.

    Raises:
        OSError: The address cannot be bound.
    """
    server = _Server(
        (host, port),
        admit,
        max_body=max_body,
        read_timeout=read_timeout,
        max_connections=max_connections,
    )
    thread = threading.Thread(
        target=server.serve_forever, name="agent-wait-webhook-server", daemon=True
    )
    thread.start()
    return server, thread
