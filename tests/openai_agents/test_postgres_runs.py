"""PostgresRuns on the machine's real PostgreSQL: runs parked by one store, resumed by another."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

psycopg = pytest.importorskip("psycopg")

from agents import Agent, function_tool  # noqa: E402
from psycopg import sql  # noqa: E402

from agent_wait.core import MemoryAnnounce, Outcome, Question  # noqa: E402
from agent_wait.openai_agents import PostgresRuns, ThreadRecord, handle_message  # noqa: E402
from tests.openai_agents.scripted import ScriptedModel  # noqa: E402
from tests.servers import unavailable  # noqa: E402

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def table() -> Iterator[str]:
    """A table name unique to the test, dropped afterwards (the server must be up: never skips)."""
    try:
        psycopg.connect(POSTGRES_URL, connect_timeout=3).close()
    except psycopg.Error as error:
        unavailable(
            f"PostgreSQL at {POSTGRES_URL}",
            5432,
            error,
            start="start PostgreSQL",
            prepare="create the database: createdb -h 127.0.0.1 -U postgres test",
        )
    name = f"agent_wait_test_runs_{uuid.uuid4().hex[:12]}"
    yield name
    with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(name)))


def refunds(ran: list[str]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    turns = [{"order_id": "order-4471", "amount": 41000}]
    return Agent("refunds", model=ScriptedModel("issue_refund", turns), tools=[issue_refund])


def test_a_record_round_trips_and_a_save_replaces_it(table: str) -> None:
    question = Question(question_id="call-0", question={"function": "f", "args": {"a": 1}})
    record = ThreadRecord(
        state="{}",
        questions=(question,),
        asked=("call-0",),
        doubts={"q": {"call_id": "call-0", "attempt": 0}},
        replies={"call-0": {"0": {"action": "no"}}},
    )
    with PostgresRuns(POSTGRES_URL, table=table) as runs:
        assert runs.load("t-1") is None
        runs.save("t-1", record)
        assert runs.load("t-1") == record
        runs.save("t-1", ThreadRecord(asked=("call-0",), conversation=[{"role": "user"}]))
        assert runs.load("t-1") == ThreadRecord(asked=("call-0",), conversation=[{"role": "user"}])
    with PostgresRuns(POSTGRES_URL, table=table) as other:
        assert other.load("t-1") == ThreadRecord(asked=("call-0",), conversation=[{"role": "user"}])
        assert other.load("t-2") is None


def test_a_run_parked_through_one_store_resumes_through_another_once(table: str) -> None:
    ran: list[str] = []
    inbox = MemoryAnnounce()
    with PostgresRuns(POSTGRES_URL, table=table) as first:
        started = handle_message(
            refunds(ran), {"thread_id": "pg-1", "input": "refund"}, inbox, runs=first
        )
    assert started.outcome is Outcome.STARTED
    [envelope] = inbox.envelopes
    answer = {"thread_id": "pg-1", "question_id": envelope.question_id, "answer": True}
    # Another worker: a fresh agent and a fresh store on the same table.
    with PostgresRuns(POSTGRES_URL, table=table) as second:
        resumed = handle_message(refunds(ran), answer, inbox, runs=second)
        assert resumed.outcome is Outcome.RESUMED, resumed.detail
        assert resumed.result.final_output == "done"
        again = handle_message(refunds(ran), answer, inbox, runs=second)
    assert again.outcome is Outcome.DUPLICATE
    assert ran == ["order-4471"]


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"url": ""}, "url"),
        ({"url": POSTGRES_URL, "table": "runs; drop"}, "table"),
        ({"url": POSTGRES_URL, "table": "a.b.c"}, "table"),
        ({"url": POSTGRES_URL, "timeout": 0}, "timeout"),
    ],
)
def test_bad_options_name_the_field(options: dict[str, Any], field: str) -> None:
    with pytest.raises(ValueError, match=f"^{field}: "):
        PostgresRuns(**options)


def test_a_bad_thread_id_names_the_field(table: str) -> None:
    with (
        PostgresRuns(POSTGRES_URL, table=table) as runs,
        pytest.raises(ValueError, match=r"^thread_id: "),
    ):
        runs.load("")
