"""The failure a transport suite gives when its server is down, or up but not prepared."""

from __future__ import annotations

import socket

import psycopg
import pytest

from tests.servers import unavailable


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_that_is_down_is_told_to_start() -> None:
    port = _free_port()
    with pytest.raises(pytest.fail.Exception) as failed:
        unavailable("X", port, OSError("refused"), start="start x", prepare="create y")
    message = str(failed.value)
    assert f"nothing listens on 127.0.0.1:{port}; start x" in message
    assert "create y" not in message
    assert ".ci/run" in message
    assert "CONTRIBUTING.md" in message


def test_a_missing_database_on_a_running_postgresql_is_told_to_create_it() -> None:
    missing = "postgresql://postgres@127.0.0.1:5432/agent_wait_no_such_database"
    with pytest.raises(psycopg.OperationalError) as refused:
        psycopg.connect(missing, connect_timeout=3).close()
    assert "does not exist" in str(refused.value)
    with pytest.raises(pytest.fail.Exception) as failed:
        unavailable("PostgreSQL", 5432, refused.value, start="start it", prepare="createdb test")
    message = str(failed.value)
    assert "createdb test" in message
    assert "start it" not in message
