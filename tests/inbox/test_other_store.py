"""The inbox over a store other than sqlite (PostgreSQL): listed through the store's protocol."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from agent_wait.core import Question, SqliteEntry, WaitPolicy, publish
from agent_wait.inbox import InboxAuth, inbox_app
from tests.inbox.conftest import SECRET, sent

# A sibling distribution: present in the workspace run, absent when agent-wait-inbox is tested
# alone (nox -s tests_package).
postgres = pytest.importorskip("agent_wait.postgres", reason="needs agent-wait-postgres installed")
PostgresAnnounce, PostgresQuestionStore = postgres.PostgresAnnounce, postgres.PostgresQuestionStore
psycopg = pytest.importorskip("psycopg")
sql = pytest.importorskip("psycopg.sql")
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"

pytestmark = pytest.mark.integration
BEARER = {"Authorization": f"Bearer {SECRET}"}


@pytest.fixture
def table() -> Iterator[str]:
    name = f"agent_wait_inbox_app_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
        connection.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def ask(table: str, question_id: str, function: str, **policy: Any) -> None:
    publish(
        [
            Question(
                question_id=question_id,
                question={"function": function, "args": {"n": question_id}},
                policy=WaitPolicy(**policy),
            )
        ],
        f"thread-{question_id}",
        PostgresAnnounce(POSTGRES_URL, table=table, channel=None, create_table=True),
        strict=True,
    )


def test_list_pages_filters_and_answers_over_postgres(table: str, tmp_path: Path) -> None:
    for n, hours in enumerate([5, 1, 3]):
        ask(table, f"q{n}", "issue_refund" if n else "delete_user", timeout=f"PT{hours}H")
    store = PostgresQuestionStore(POSTGRES_URL, table=table)
    path = tmp_path / "entry.sqlite3"
    with SqliteEntry(path) as entry:
        client = TestClient(inbox_app(store, InboxAuth(token=SECRET), entry=entry))
        first = client.get("/api/questions", params={"limit": "2"}, headers=BEARER).json()
        assert [q["envelope"]["question_id"] for q in first["questions"]] == ["q1", "q2"]
        rest = client.get(
            "/api/questions", params={"after": first["next_cursor"]}, headers=BEARER
        ).json()
        assert [q["envelope"]["question_id"] for q in rest["questions"]] == ["q0"]
        assert rest["next_cursor"] is None
        only = client.get("/api/questions", params={"function": "delete_user"}, headers=BEARER)
        assert [q["envelope"]["question_id"] for q in only.json()["questions"]] == ["q0"]
        done = client.post("/api/questions/q2/answer", headers=BEARER, json={"action": "reject"})
        assert done.json()["answered_by"] == "api"
        assert "q2" not in client.get("/api/questions", headers=BEARER).text
    assert [m["answer"] for m in sent(path)] == [{"action": "reject"}]
    store.close()
