"""A real graph refuses an answer recorded in the PostgreSQL store: the postgres announcer, told of
the refusal, opens the question again once, with the reason, and a corrected answer goes through."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import SqliteEntry
from agent_wait.postgres import PostgresAnnounce, PostgresQuestionStore, create_schema
from tests.langgraph.test_host import Counts, refund_graph
from tests.refusals import REFUSED, answer_another_way, correct_and_resume, refuse_a_misspelt_answer


@pytest.fixture
def table(conn: psycopg.Connection) -> Iterator[str]:
    name = f"agent_wait_refused_{uuid.uuid4().hex[:12]}"
    create_schema(conn, name)
    yield name
    for dropped in (name, f"{name}_audit"):  # and the announcer's audit log beside it
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(dropped)))


def test_a_refused_answer_reopens_once_with_the_reason_and_a_corrected_one_resumes(
    postgres_url: str, table: str, tmp_path: Path
) -> None:
    counts = Counts()
    graph = refund_graph(counts)
    inbox = PostgresAnnounce(postgres_url, table=table, channel=None).with_lifecycle_events(REFUSED)
    store = PostgresQuestionStore(postgres_url, table=table)
    entry = SqliteEntry(tmp_path / "messages.sqlite3")
    question_id, event, note = refuse_a_misspelt_answer(graph, inbox, store, entry)

    # Two more deliveries of the same event race on their own connections: neither reopens
    # again (the row no longer records the refused answer), so the note stays the first one.
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

    # A late copy of the refusal, after the corrected answer, leaves that answer alone.
    late_copy = partial(racers[0].deliver_event, event)
    correct_and_resume(graph, counts, inbox, store, entry, question_id, late_copy)
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
    question_id = answer_another_way(graph, inbox)
    store = PostgresQuestionStore(postgres_url, table=table)
    [question] = store.find(question_id)
    store.close()
    assert (question.status, question.answered_by, question.answer) == ("answered", "bob", None)
    inbox.close()
