"""Real servers that fail on demand: a moto process to kill, pause and restart; a webhook receiver.

Both listen on 127.0.0.1 only and keep their port across restarts, as a real endpoint does, so
announcers built once keep working when the service comes back.

- :class:`KillableMoto` runs ``moto_server`` as a child process. ``kill`` is SIGKILL (moto keeps
  its state in memory, so a restarted server has no queue until :meth:`KillableMoto.restart`'s
  caller creates it again); ``pause``/``resume`` are SIGSTOP/SIGCONT, so requests sent meanwhile
  time out on the client and are then processed late by the server, which is how a transport
  can accept a message whose publish the client reported as failed.
- :class:`FaultyReceiver` is a ``ThreadingHTTPServer`` that verifies Standard Webhooks
  signatures and, per request, answers 200, answers 500, drops the connection without an
  answer, hangs past the client's timeout, or processes the envelope and still answers 500;
  ``down``/``up`` close and reopen the listening socket (connections are refused meanwhile).
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from agent_wait.webhook import WebhookVerificationError, verify
from tests.aws_moto import _executable, free_port

_STARTUP_SECONDS = 30.0


class KillableMoto:
    """A ``moto_server`` process on a fixed 127.0.0.1 port that a test may kill and pause."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._process: subprocess.Popen[bytes] | None = None
        self.paused = False

    @property
    def up(self) -> bool:
        """True while the process runs and is not paused."""
        return self._process is not None and not self.paused

    def start(self) -> None:
        """Start the process and wait until it answers."""
        assert self._process is None, "already running"
        process = subprocess.Popen(
            [_executable(), "-H", "127.0.0.1", "-p", str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + _STARTUP_SECONDS
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"moto_server exited with {process.returncode} on startup")
            try:
                with urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1) as response:
                    if response.status == 200:
                        break
            except (urllib.error.URLError, OSError):
                pass
            if time.monotonic() > deadline:
                process.kill()
                process.wait()
                raise RuntimeError(f"moto_server not ready on {self.url}")
            time.sleep(0.05)
        self._process = process
        self.paused = False

    def kill(self) -> None:
        """SIGKILL the process: everything it held is gone."""
        assert self._process is not None, "not running"
        if self.paused:
            os.kill(self._process.pid, signal.SIGCONT)
        self._process.kill()
        self._process.wait()
        self._process = None
        self.paused = False

    def restart(self) -> None:
        """Start a fresh, empty server on the same port."""
        self.start()

    def pause(self) -> None:
        """SIGSTOP: connections are accepted by the kernel, nothing is answered."""
        assert self._process is not None
        assert not self.paused
        os.kill(self._process.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        """SIGCONT: the server answers again, including requests queued while it was paused."""
        assert self._process is not None
        assert self.paused
        os.kill(self._process.pid, signal.SIGCONT)
        self.paused = False

    def stop(self) -> None:
        """End the process, whatever its state (teardown)."""
        if self._process is not None:
            self.kill()


BEHAVIOURS = ("ok", "error", "processed_error", "drop", "hang")
"""What :class:`FaultyReceiver` may do with one request."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def setup(self) -> None:
        super().setup()
        self.server.receiver.opened(self.connection)

    def do_POST(self) -> None:
        receiver = self.server.receiver
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        behaviour = receiver.choose()
        if behaviour == "drop":
            self.close_connection = True
            return
        if behaviour == "hang":
            receiver.wake.wait(receiver.hang_seconds)
            self.close_connection = True
            return
        if behaviour == "error":
            self._answer(500)
            return
        try:
            envelope = verify(body, dict(self.headers.items()), receiver.secret)
        except WebhookVerificationError:
            receiver.count("bad_signature")
            self._answer(400)
            return
        receiver.record(envelope, dict(self.headers.items()), body)
        self._answer(500 if behaviour == "processed_error" else 200)

    def _answer(self, status: int) -> None:
        payload = b"{}" if status < 300 else b"scripted failure"
        self.send_response(status)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, format: str, *args: object) -> None:
        pass


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    receiver: FaultyReceiver


class FaultyReceiver:
    """A webhook receiver on a fixed port whose answers a seeded generator chooses.

    Attributes:
        envelopes: Every envelope whose signature verified and that the receiver processed
            (answered 200, or ``processed_error``), in arrival order.
        headers: The request headers of each entry of ``envelopes``.
        bodies: The raw request body of each entry of ``envelopes``.
        counts: How often each behaviour (and ``bad_signature``) happened.
    """

    def __init__(
        self,
        secret: str,
        seed: int,
        weights: Mapping[str, float],
        hang_seconds: float = 1.0,
    ) -> None:
        self.secret = secret
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/hooks/agent-wait"
        self.weights = dict(weights)
        self.hang_seconds = hang_seconds
        self.faults = True
        self.wake = threading.Event()
        self.envelopes: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        self.counts: Counter[str] = Counter()
        self._rng = random.Random(seed)
        self._choices = 0
        self._lock = threading.Lock()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: list[socket.socket] = []

    @property
    def up(self) -> bool:
        """True while the socket listens."""
        return self._server is not None

    def choose(self) -> str:
        """The behaviour for the next request (always ``ok`` when faults are off)."""
        with self._lock:
            if not self.faults:
                behaviour = "ok"
            else:
                names = list(self.weights)
                unseen = [n for n in names if self.weights[n] > 0 and not self.counts[n]]
                self._choices += 1
                # Every tenth request takes a behaviour that has not happened yet, so a rare one
                # (a hang at 1.5%) is exercised in every soak, whatever SEED is.
                if unseen and self._choices % 10 == 0:
                    behaviour = self._rng.choice(unseen)
                else:
                    behaviour = self._rng.choices(names, [self.weights[n] for n in names])[0]
            self.counts[behaviour] += 1
            return behaviour

    def count(self, what: str) -> None:
        """Count an event."""
        with self._lock:
            self.counts[what] += 1

    def opened(self, connection: socket.socket) -> None:
        """Track a client connection, so that :meth:`down` can cut it."""
        with self._lock:
            self._connections.append(connection)

    def record(self, envelope: dict[str, Any], headers: dict[str, str], body: bytes) -> None:
        """Keep an envelope the receiver processed, with its request's headers and raw body."""
        with self._lock:
            self.envelopes.append(envelope)
            self.headers.append(headers)
            self.bodies.append(body)

    def received(self) -> list[dict[str, Any]]:
        """A snapshot of the processed envelopes."""
        with self._lock:
            return list(self.envelopes)

    def start(self) -> None:
        """Listen (again) on the receiver's port."""
        assert self._server is None
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.receiver = self
        thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        thread.start()
        self._server, self._thread = server, thread

    def down(self) -> None:
        """Stop as a crashed server does: kept-alive connections are cut, new ones refused."""
        assert self._server is not None
        assert self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections, self._connections = self._connections, []
        for connection in connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        self._server = self._thread = None
        self.count("down")

    def up_again(self) -> None:
        """Listen again after :meth:`down`."""
        self.start()

    def stop(self) -> None:
        """Teardown: release hanging handlers and close the socket."""
        self.wake.set()
        if self._server is not None:
            self.down()


def sqs_messages(sqs: Any, queue_url: str) -> list[dict[str, Any]]:
    """Receive and delete every visible message of a queue; return the parsed bodies."""
    bodies: list[dict[str, Any]] = []
    while True:
        batch = sqs.receive_message(
            QueueUrl=queue_url, MaxNumberOfMessages=10, WaitTimeSeconds=0
        ).get("Messages", [])
        if not batch:
            return bodies
        sqs.delete_message_batch(
            QueueUrl=queue_url,
            Entries=[
                {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(batch)
            ],
        )
        bodies.extend(json.loads(m["Body"]) for m in batch)
