"""PostgresQuestionStore: the question lifecycle on the PostgreSQL announcer's table."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import (
    BaseAnnounce,
    Question,
    QuestionStatus,
    QuestionStore,
    SqliteEntry,
    Transition,
    WaitPolicy,
    publish,
)
from agent_wait.host import QuestionClosed, answer, sweep
from agent_wait.postgres import PostgresAnnounce, PostgresQuestionStore, create_schema
from agent_wait.testing import StoreContract


class TestPostgresQuestionStore(StoreContract):
    @pytest.fixture(autouse=True)
    def _table(self, postgres_url: str, conn: psycopg.Connection) -> Iterator[None]:
        self.url = postgres_url
        self.table = f"agent_wait_store_{uuid.uuid4().hex[:12]}"
        yield
        for name in (self.table, f"{self.table}_audit"):
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))

    def make_store(self) -> QuestionStore:
        return PostgresQuestionStore(self.url, table=self.table, create_table=True)

    def make_announcer(self, store: QuestionStore) -> BaseAnnounce:
        return PostgresAnnounce(self.url, table=self.table, channel=None, create_table=True)


@pytest.fixture
def table(conn: psycopg.Connection) -> Iterator[str]:
    name = f"agent_wait_store_{uuid.uuid4().hex[:12]}"
    create_schema(conn, name)  # the announcer's table as it was before the lifecycle columns
    yield name
    for dropped in (name, f"{name}_audit"):  # and the announcer's audit log beside it
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(dropped)))


def publish_one(url: str, table: str, **policy: Any) -> None:
    publish(
        [Question(question_id="q1", question={"n": 1}, policy=WaitPolicy(**policy))],
        "t1",
        PostgresAnnounce(url, table=table, channel=None),
        strict=True,
    )


def test_stores_on_separate_connections_race_to_one_close(postgres_url: str, table: str) -> None:
    publish_one(postgres_url, table)
    stores = [PostgresQuestionStore(postgres_url, table=table) for _ in range(6)]
    barrier = threading.Barrier(len(stores))
    results: dict[int, Transition] = {}

    def race(index: int) -> None:
        stores[index].find("q1")  # connect (and migrate) before the race
        barrier.wait()
        status = QuestionStatus.EXPIRED if index % 2 else QuestionStatus.ANSWERED
        results[index] = stores[index].transition("t1", "q1", status, by=f"r{index}", answer=index)

    threads = [threading.Thread(target=race, args=(i,)) for i in range(len(stores))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for store in stores:
        store.close()
    winners = [i for i, result in results.items() if result.won]
    assert len(winners) == 1
    assert {(r.question.answered_by, r.question.answer) for r in results.values()} == {
        (f"r{winners[0]}", winners[0])
    }


def test_answer_and_sweep_through_the_postgres_store(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    publish_one(postgres_url, table, timeout="PT1H", default={"action": "reject"})
    store = PostgresQuestionStore(postgres_url, table=table)
    entry = SqliteEntry(tmp_path / "messages.sqlite3")
    report = sweep(store=store, entry=entry, now="2099-01-01T00:00:00Z")
    assert [q.envelope.question_id for q in report.expired] == ["q1"]
    [received] = entry.receive(1)
    assert received.message == {
        "thread_id": "t1",
        "question_id": "q1",
        "answer": {"action": "reject"},
        "answered_by": "sweeper",
    }
    with pytest.raises(QuestionClosed, match="already expired by sweeper"):
        answer("q1", "approve", store=store, entry=entry)
    store.close()
    entry.close()
