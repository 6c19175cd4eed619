"""The worker's health endpoints: ``/healthz`` and ``/readyz`` over the standard library's HTTP server.

``/healthz`` answers 200 while the worker's loop turns (a liveness probe restarts a process
whose loop is stuck), ``/readyz`` 200 while its entry point answers and every readiness check
passes (the framework's checkpointer or history store: a readiness probe takes a worker out of
rotation during an outage of either, without restarting it); 503 otherwise. Each
body is a small JSON object with the figures behind the answer: never a message, an id or a
credential.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_wait.core import WorkerStatus

logger = logging.getLogger("agent_wait.core.serve")


def health_address(health: int | str) -> tuple[str, int]:
    """``(host, port)`` from a port (every interface) or ``"host:port"``.

    Raises:
        ValueError: Neither; the message names ``health`` and the value.
    """
    host, port = "", health
    if isinstance(health, str):
        host, _, port = health.rpartition(":")
        host = host.strip("[]")
    try:
        number = int(port)
    except ValueError:
        number = -1
    if isinstance(health, bool) or not 0 <= number <= 65535:
        raise ValueError(f"health: expected a port or 'host:port', got {health!r}")
    return host, number


ReadyChecks = Mapping[str, Callable[[], object]]
"""Readiness checks by what they check (``"checkpointer"``): each raises when it is down."""


def check_ready_checks(ready: ReadyChecks | None) -> dict[str, Callable[[], object]]:
    """The checks as a dict, refused at start rather than at the first probe.

    Raises:
        TypeError: Not a mapping of names to callables; the message names ``ready``.
    """
    if ready is None:
        return {}
    if not isinstance(ready, Mapping) or not all(  # pyright: ignore[reportUnnecessaryIsInstance]
        isinstance(name, str) and callable(check)  # pyright: ignore[reportUnnecessaryIsInstance]
        for name, check in ready.items()
    ):
        raise TypeError(f"ready: expected a mapping of names to callables, got {ready!r}")
    return dict(ready)


def failed_checks(checks: ReadyChecks) -> dict[str, str]:
    """Each check that raised, with its exception's type.

    Never the exception's text: it may name a server's user or a thread.
    """
    down: dict[str, str] = {}
    for name, check in checks.items():
        try:
            check()
        except Exception as error:  # any failure means not ready
            down[name] = type(error).__name__
            logger.debug("readiness check %s failed", name, exc_info=error)
    return down


class HealthServer:
    """Serves the endpoints from a daemon thread until :meth:`close`.

    ``checks`` run on every ``/readyz`` request, in the request's thread.
    """

    def __init__(
        self, status: WorkerStatus, health: int | str, checks: ReadyChecks | None = None
    ) -> None:
        ready_checks = dict(checks or {})

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                path = self.path.partition("?")[0]
                body: dict[str, Any]
                if path == "/healthz":
                    ok = status.alive
                    body = {"status": "ok" if ok else "stuck"}
                    code = 200 if ok else 503
                elif path == "/readyz":
                    down = failed_checks(ready_checks)
                    ok = status.ready and status.alive and not down
                    outage = status.outage
                    body = {
                        "status": "ready" if ok else "unavailable",
                        "entry": status.entry.name,
                        "in_flight": status.in_flight,
                    }
                    if outage is not None:
                        body["unreachable_for_s"] = round(outage, 1)
                    if down:
                        body["down"] = down
                    code = 200 if ok else 503
                else:
                    body, code = {"status": "not found", "paths": ["/healthz", "/readyz"]}, 404
                data = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                logger.debug("health: " + format, *args)

        self._server = ThreadingHTTPServer(health_address(health), Handler)
        self._server.daemon_threads = True
        host, port = self._server.server_address[:2]
        self.address: tuple[str, int] = (str(host), int(port))
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="agent-wait-health", daemon=True
        )
        self._thread.start()
        logger.info("health endpoints on %s:%d (/healthz, /readyz)", *self.address)

    def close(self) -> None:
        """Stop serving and close the socket."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
