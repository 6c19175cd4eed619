"""A real HTTP receiver on 127.0.0.1 whose answers are scripted per path."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agent_wait.core import Question, WaitEnvelope, WaitPolicy, build_envelope

SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


@dataclass(frozen=True)
class Step:
    """One scripted answer: a status and headers, or hang until the test ends, or meet others.

    ``stall_body`` sends the status line and headers, then stalls halfway through the body.

    ``trickle=s`` sends the status line, the headers and the body one byte every ``s`` seconds;
    ``trickle_body=s`` sends the status line and headers at once, then the body that way. Each
    byte arrives well within any per-read timeout, so only a bound on the whole exchange ends it.

    ``meet=n`` holds the request until n requests of that path are in flight at once (or 5 s
    pass), so a test can tell concurrent delivery from sequential without measuring time.
    """

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict[str, str])
    hang: bool = False
    meet: int = 0
    stall_body: bool = False
    trickle: float = 0.0
    trickle_body: float = 0.0


@dataclass(frozen=True)
class Recorded:
    path: str
    headers: dict[str, str]
    body: bytes
    client_port: int
    at: float


class Receiver:
    """The scripted server's state: scripts per path, every request received, in-flight peaks."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Step]] = {}
        self.received: list[Recorded] = []
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.cond = threading.Condition()
        self.release = threading.Event()
        self.base_url = ""

    def url(self, path: str) -> str:
        return self.base_url + path

    def script(self, path: str, *steps: Step) -> str:
        """Answer requests to ``path`` with ``steps`` in order, the last one repeating."""
        self.scripts[path] = list(steps)
        return self.url(path)

    def requests(self, path: str) -> list[Recorded]:
        with self.cond:
            return [r for r in self.received if r.path == path]

    def next_step(self, path: str) -> Step:
        with self.cond:
            steps = self.scripts.get(path) or [Step()]
            return steps.pop(0) if len(steps) > 1 else steps[0]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so connection reuse is observable
    server: _Server

    def do_POST(self) -> None:
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        record = Recorded(
            self.path,
            {k.lower(): v for k, v in self.headers.items()},
            body,
            self.client_address[1],
            time.monotonic(),
        )
        with receiver.cond:
            receiver.received.append(record)
        step = receiver.next_step(self.path)
        if step.hang:
            receiver.release.wait(30)
            self.close_connection = True
            return
        if step.meet:
            with receiver.cond:
                now = receiver.in_flight.get(self.path, 0) + 1
                receiver.in_flight[self.path] = now
                receiver.peak[self.path] = max(receiver.peak.get(self.path, 0), now)
                receiver.cond.notify_all()
                receiver.cond.wait_for(lambda: receiver.peak[self.path] >= step.meet, timeout=5)
                # Leave before answering: the client frees its slot only after the answer.
                receiver.in_flight[self.path] -= 1
        payload = b'{"ok": true}' if step.status < 300 else b"scripted"
        if step.trickle or step.trickle_body:
            self._trickle(step, payload)
            return
        self.send_response(step.status)
        for name, value in step.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if step.stall_body:
            self.wfile.write(payload[:4])
            self.wfile.flush()
            receiver.release.wait(30)
            self.close_connection = True
            return
        self.wfile.write(payload)

    def _trickle(self, step: Step, payload: bytes) -> None:
        # Long enough that trickling all of it takes far more than any test's budget.
        body = payload + b" " * 200
        head = (
            f"HTTP/1.1 {step.status} Trickle\r\nX-Padding: {'x' * 100}\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        if step.trickle_body:
            self.wfile.write(head)
            slow, interval = body, step.trickle_body
        else:
            slow, interval = head + body, step.trickle
        self.close_connection = True
        try:
            for i in range(len(slow)):
                self.wfile.write(slow[i : i + 1])
                self.wfile.flush()
                if self.server.receiver.release.wait(interval):
                    return
        except OSError:  # the client gave up and closed the connection
            return

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    receiver: Receiver


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    server = _Server(("127.0.0.1", 0), _Handler)
    server.receiver = Receiver()
    server.receiver.base_url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    )
    thread.start()
    yield server.receiver
    server.receiver.release.set()
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]


def make_question(n: int = 1) -> Question:
    return Question(
        question_id=f"q-{n}",
        question={
            "function": "issue_refund",
            "args": {"order_id": "order-4471", "amount": 41000 + n},
        },
        policy=WaitPolicy(
            timeout="P3D", tags={"approver_group": "finance"}, allowed_actions=["approve", "reject"]
        ),
        source={"function": "issue_refund"},
    )


def make_envelope(n: int = 1) -> WaitEnvelope:
    return build_envelope(make_question(n), "order-4471")


@contextmanager
def uvicorn_serving(config: Any) -> Iterator[int]:
    """Run ``uvicorn.Server(config)`` on a free 127.0.0.1 port in a thread; yield the port."""
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert thread.is_alive(), "uvicorn stopped"
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.01)
    try:
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
