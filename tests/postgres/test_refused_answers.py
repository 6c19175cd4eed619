"""A real graph refuses an answer recorded in the PostgreSQL store: the postgres announcer, told of
the refusal, opens the question again once, with the reason, and a corrected answer goes through."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import MemoryAnnounce, Outcome, SqliteEntry, answer
from agent_wait.langgraph import handle_message
from agent_wait.postgres import PostgresAnnounce, PostgresQuestionStore, create_schema
from tests.langgraph.test_host import START_MESSAGE, Counts, refund_graph

REFUSED = "wait.answer_refused"


@pytest.fixture
def table(conn: psycopg.Connection) -> Iterator[str]:
    name = f"agent_wait_refused_{uuid.uuid4().hex[:12]}"
    create_schema(conn, name)
    yield name
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def test_a_refused_answer_reopens_once_with_the_reason_and_a_corrected_one_resumes(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    inbox = PostgresAnnounce(postgres_url, table=table, channel=None).with_lifecycle_events(REFUSED)
    audit = MemoryAnnounce().with_lifecycle_events(REFUSED)
    store = PostgresQuestionStore(postgres_url, table=table)
    entry = SqliteEntry(tmp_path / "messages.sqlite3")
    [question_id] = handle_message(graph, START_MESSAGE, inbox).question_ids
    bad = {"args": {"amonut": 1}}
    answer(question_id, "approve", answer=bad, by="alice", force=True, store=store, entry=entry)
    [sent] = entry.receive(1)
    assert entry.ack(sent)

    refused = handle_message(graph, sent.message, [inbox, audit])
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert [event.ok for event in refused.events] == [True, True]
    [question] = store.find(question_id)
    assert question.is_open
    assert question.refusal is not None
    assert question.refusal["answer"] == {**bad, "action": "approve"}
    assert "amonut" in question.refusal["reason"]
    note = question.describe_refusal()

    # Two more deliveries of the same event race on their own connections: neither reopens
    # again (the row no longer records the refused answer), so the note stays the first one.
    [event] = audit.events
    racers = [PostgresAnnounce(postgres_url, table=table, channel=None) for _ in range(2)]
    for racer in racers:
        racer.with_lifecycle_events(REFUSED)
    start = threading.Barrier(len(racers))

    def deliver(index: int) -> None:
        start.wait()
        racers[index].deliver_event(event)

    with ThreadPoolExecutor(len(racers)) as pool:
        list(pool.map(deliver, range(len(racers))))
    [question] = store.find(question_id)
    assert (question.is_open, question.describe_refusal()) == (True, note)

    result = answer(question_id, "approve", by="alice", store=store, entry=entry)
    assert result.question.refusal is None
    [corrected] = entry.receive(1)
    assert entry.ack(corrected)
    # A late copy of the refusal, after the corrected answer, leaves that answer alone.
    racers[0].deliver_event(event)
    resumed = handle_message(graph, corrected.message, inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert counts.body == 1
    [question] = store.find(question_id)
    assert (question.status, question.answer, question.refusal) == (
        "answered",
        {"action": "approve"},
        None,
    )
    for closing in (*racers, inbox, store, entry):
        closing.close()


def test_the_answered_event_closes_a_row_answered_another_way(
    postgres_url: str, table: str
) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    inbox = PostgresAnnounce(postgres_url, table=table, channel=None).with_lifecycle_events(
        "wait.answered"
    )
    [question_id] = handle_message(graph, START_MESSAGE, inbox).question_ids
    message = {
        "thread_id": START_MESSAGE["thread_id"],
        "question_id": question_id,
        "answer": {"action": "approve"},
        "answered_by": "bob",
    }
    assert handle_message(graph, message, inbox).outcome is Outcome.RESUMED
    store = PostgresQuestionStore(postgres_url, table=table)
    [question] = store.find(question_id)
    store.close()
    assert (question.status, question.answered_by, question.answer) == ("answered", "bob", None)
    inbox.close()
