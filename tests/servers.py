"""Failure messages for the real servers the transport suites need (PostgreSQL, Redis, NATS, RabbitMQ).

A server that is down and a server that is up but not prepared (no ``test`` database, no JetStream,
``guest`` refused) need different fixes; the message says which, and where the setup is written
down. A missing server fails the suite, never skips it.
"""

from __future__ import annotations

import socket
from typing import NoReturn

import pytest

SETUP = ".ci/run starts and prepares every test server; CONTRIBUTING.md lists what the suite needs"


def listening(port: int) -> bool:
    """Whether something accepts TCP connections on 127.0.0.1:``port``."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    except OSError:
        return False
    return True


def unavailable(
    server: str, port: int, error: BaseException, *, start: str, prepare: str
) -> NoReturn:
    """Fail the test: ``start`` is the fix when nothing listens on ``port``, else ``prepare``."""
    fix = prepare if listening(port) else f"nothing listens on 127.0.0.1:{port}; {start}"
    pytest.fail(f"{server}: {error!r}. {fix}. {SETUP}.", pytrace=False)
