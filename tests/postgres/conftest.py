"""PostgreSQL tests run against the machine's real server (CI starts it); unreachable is a failure.

Every test gets its own table and NOTIFY channel, dropped afterwards.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest
from psycopg import sql

from agent_wait.postgres import create_schema
from tests.servers import unavailable

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """The database URL, after checking that it accepts a connection (fails, never skips)."""
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error as error:
        unavailable(
            f"PostgreSQL at {POSTGRES_URL}",
            5432,
            error,
            start="start PostgreSQL",
            prepare=(
                "the server is up: create the database and trust user postgres from 127.0.0.1 "
                "(createdb -h 127.0.0.1 -U postgres test)"
            ),
        )
    return POSTGRES_URL


@pytest.fixture
def conn(postgres_url: str) -> Iterator[psycopg.Connection]:
    """An autocommit connection for reading back rows and listening."""
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        yield connection


@dataclass
class Names:
    table: str
    channel: str


@pytest.fixture
def names(conn: psycopg.Connection) -> Iterator[Names]:
    """A table (created with create_schema) and a channel unique to the test."""
    suffix = uuid.uuid4().hex[:12]
    made = Names(table=f"agent_wait_test_{suffix}", channel=f"agent_wait_test_{suffix}")
    create_schema(conn, made.table)
    yield made
    # The announcer keeps its audit log in a table beside its own.
    for table in (made.table, f"{made.table}_audit"):
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


@pytest.fixture
def closed_port() -> Iterator[int]:
    """A port on 127.0.0.1 that refuses connections: bound (so nobody else takes it), not listening."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield sock.getsockname()[1]
