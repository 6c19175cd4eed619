"""PostgresLedger: the execution ledger kit on the real server, and the configured ledger."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import ExecutionLedger, configured_ledger
from agent_wait.postgres import PostgresLedger
from agent_wait.testing import LedgerContract


class TestPostgresLedger(LedgerContract):
    @pytest.fixture(autouse=True)
    def _table(self, postgres_url: str, conn: psycopg.Connection) -> Iterator[None]:
        self.url = postgres_url
        self.table = f"agent_wait_ledger_{uuid.uuid4().hex[:12]}"
        yield
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(self.table)))

    def make_ledger(self) -> ExecutionLedger:
        return PostgresLedger(self.url, self.table)


def test_the_configured_ledger_is_beside_the_postgres_announcer_table(
    postgres_url: str, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    table = f"agent_wait_cfg_{uuid.uuid4().hex[:12]}"
    entries = [{"use": "postgres", "url": postgres_url, "table": table}]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(entries))
    ledger = configured_ledger()
    try:
        assert isinstance(ledger, PostgresLedger)
        assert ledger.claim("k", 0, "t") is None
        [row] = conn.execute(
            sql.SQL("SELECT key, attempt, token, done FROM {}").format(
                sql.Identifier(f"{table}_executions")
            )
        ).fetchall()
        assert row == ("k", 0, "t", False)
    finally:
        ledger.close()
        conn.execute(
            sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(f"{table}_executions"))
        )


def test_options_are_checked() -> None:
    with pytest.raises(ValueError, match="table"):
        PostgresLedger("postgresql://127.0.0.1/test", "x; drop")
