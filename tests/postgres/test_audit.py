"""The audit log beside a PostgreSQL question table: the audit log kit."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import (
    AuditEntry,
    BaseAnnounce,
    Question,
    QuestionStore,
    SqliteEntry,
    WaitPolicy,
    canonical_json,
    publish,
)
from agent_wait.host import answer
from agent_wait.postgres import PostgresAnnounce, PostgresQuestionStore
from agent_wait.testing import AuditLogContract

AGENT_WAIT = shutil.which("agent-wait") or "agent-wait"


class TestPostgresAuditLog(AuditLogContract):
    @pytest.fixture(autouse=True)
    def _table(self, postgres_url: str, conn: psycopg.Connection) -> Iterator[None]:
        self.url = postgres_url
        self.conn = conn
        self.table = f"agent_wait_audit_{uuid.uuid4().hex[:12]}"
        self.audit = sql.Identifier(f"{self.table}_audit")
        yield
        for dropped in (self.table, f"{self.table}_audit"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(dropped)))

    def make_store(self) -> QuestionStore:
        return PostgresQuestionStore(self.url, table=self.table)

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        return PostgresAnnounce(self.url, table=self.table, channel=None, create_table=True)

    def edit_entry(self, store: QuestionStore, entry: AuditEntry, data: dict[str, Any]) -> None:
        self.conn.execute(
            sql.SQL(
                "UPDATE {} SET data = %s WHERE thread_id = %s AND question_id = %s AND seq = %s"
            ).format(self.audit),
            [canonical_json(data), entry.thread_id, entry.question_id, entry.seq],
        )

    def remove_entry(self, store: QuestionStore, entry: AuditEntry) -> None:
        self.conn.execute(
            sql.SQL("DELETE FROM {} WHERE thread_id = %s AND question_id = %s AND seq = %s").format(
                self.audit
            ),
            [entry.thread_id, entry.question_id, entry.seq],
        )


def agent_wait(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [AGENT_WAIT, *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_agent_wait_audit_reads_the_configured_postgres_table(
    postgres_url: str, conn: psycopg.Connection, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    table = f"agent_wait_cli_{uuid.uuid4().hex[:12]}"
    configured = [{"use": "postgres", "url": postgres_url, "table": table, "create_table": True}]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(configured))
    asked = Question(
        question_id="refund-1",
        question={"function": "issue_refund", "args": {"amount": 41}},
        policy=WaitPolicy(allowed_actions=["approve", "reject"]),
    )
    thread = f"order-{uuid.uuid4().hex[:8]}"
    try:
        assert publish([asked], thread).ok
        store = PostgresQuestionStore(postgres_url, table=table)
        with SqliteEntry(tmp_path / "entry.sqlite3") as entry:
            answer("refund-1", "approve", by="alice", store=store, entry=entry)
        store.close()
        shown = agent_wait("audit", "refund-1", "--store", "postgres")
        assert shown.returncode == 0, shown.stderr
        assert f"refund-1 (thread {thread}): 3 entries" in shown.stdout
        assert "chain verified" in shown.stdout
        exported = agent_wait("audit", "--export", "jsonl", "--store", "postgres")
        kinds = [json.loads(line)["kind"] for line in exported.stdout.splitlines()]
        assert kinds == ["asked", "delivered", "answered"]
        conn.execute(
            sql.SQL("UPDATE {} SET data = replace(data, 'alice', 'mallory') WHERE seq = 3").format(
                sql.Identifier(f"{table}_audit")
            )
        )
        tampered = agent_wait("audit", "refund-1", "--store", "postgres")
        assert tampered.returncode == 1
        assert f"entry 3 (answered, {thread}/refund-1): its content does not match its hash" in (
            tampered.stderr
        )
    finally:
        for dropped in (table, f"{table}_audit", f"{table}_executions"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(dropped)))
