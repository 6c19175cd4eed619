"""The core announcer conformance suite against the real PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import BaseAnnounce
from agent_wait.postgres import PostgresAnnounce
from agent_wait.testing import AnnouncerContract

from .conftest import Names


class TestPostgresAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _database(
        self, postgres_url: str, conn: psycopg.Connection, names: Names, closed_port: int
    ) -> None:
        self.url, self.conn, self.names = postgres_url, conn, names
        self.refused = f"postgresql://postgres@127.0.0.1:{closed_port}/test"

    def make_announcer(self) -> BaseAnnounce:
        return PostgresAnnounce(self.url, table=self.names.table, channel=self.names.channel)

    def make_failing_announcer(self) -> BaseAnnounce:
        return PostgresAnnounce(self.refused, table=self.names.table, timeout=2)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        query = sql.SQL("SELECT envelope FROM {}").format(sql.Identifier(self.names.table))
        return [row[0] for row in self.conn.execute(query).fetchall()]
