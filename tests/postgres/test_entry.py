"""The ``postgres`` entry point against the real server: the conformance kit, plus its own parts."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from urllib.parse import urlsplit

import psycopg
import pytest
from psycopg import sql

from agent_wait.core import ConfigError, EntryPoint, entry
from agent_wait.postgres import PostgresEntry
from agent_wait.testing import EntryContract


@pytest.fixture
def entry_table(conn: psycopg.Connection) -> Iterator[str]:
    """A message table name unique to the test, dropped afterwards."""
    table = f"agent_wait_msg_{uuid.uuid4().hex[:12]}"
    yield table
    conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))


class TestPostgresEntry(EntryContract):
    tells_oldest_waiting = True

    @pytest.fixture(autouse=True)
    def _nowhere(self, closed_port: int) -> None:
        self.closed_port = closed_port

    def make_unreachable_entry(self) -> EntryPoint:
        return PostgresEntry(
            f"postgresql://postgres@127.0.0.1:{self.closed_port}/test",
            table=self.table,
            timeout=1.0,
        )

    @pytest.fixture(autouse=True)
    def _server(self, postgres_url: str, entry_table: str) -> None:
        self.url = postgres_url
        self.table = entry_table

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        return PostgresEntry(
            self.url,
            table=self.table,
            channel=self.table,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pytest.skip("a PostgreSQL text column holds only UTF-8")
        if "\x00" in text:
            pytest.skip("a PostgreSQL text column holds no NUL")
        entry.dead_letters()  # creates the table
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "INSERT INTO {} (thread_id, body, state, visible_at, sent_at) "
                    "VALUES (%s, %s, 'ready', clock_timestamp(), clock_timestamp())"
                ).format(sql.Identifier(self.table)),
                [thread_id, text],
            )


def _answer(thread: str, n: int) -> dict[str, object]:
    return {"thread_id": thread, "question_id": f"q{n}", "answer": {"n": n}}


def test_a_waiting_receiver_wakes_on_notify_not_on_its_poll(
    postgres_url: str, entry_table: str
) -> None:
    """If this fails, a waiting host only sees a new message at its next poll."""
    with (
        PostgresEntry(postgres_url, table=entry_table, channel=entry_table, poll_interval=30) as a,
        PostgresEntry(postgres_url, table=entry_table, channel=entry_table) as b,
    ):
        got: list[float] = []

        def wait() -> None:
            [received] = a.receive(1, wait=20.0)
            got.append(time.monotonic())
            a.ack(received)

        waiter = threading.Thread(target=wait)
        waiter.start()
        time.sleep(0.5)
        sent = time.monotonic()
        b.send(_answer("notify-thread", 1))
        waiter.join(20)
        assert got, "the receiver got nothing"
        assert got[0] - sent < 10, "the receiver was not woken by the NOTIFY"


def test_retries_back_off_exponentially(postgres_url: str, entry_table: str) -> None:
    """If this fails, a failing message is retried at a fixed pace (or not at all)."""
    with PostgresEntry(
        postgres_url, table=entry_table, channel=entry_table, retry_delay=0.4, max_retry_delay=5
    ) as messages:
        messages.send(_answer("backoff", 1))
        [first] = messages.receive(1)
        messages.fail(first, "RuntimeError: one")
        assert messages.receive(1) == []
        [second] = messages.receive(1, wait=3.0)
        messages.fail(second, "RuntimeError: two")
        time.sleep(0.5)
        assert messages.receive(1) == [], "the second retry came after one retry_delay"
        [third] = messages.receive(1, wait=3.0)
        assert third.attempt == 3
        messages.ack(third)


def test_two_hosts_never_hold_one_thread_at_once(postgres_url: str, entry_table: str) -> None:
    """If this fails, two hosts on separate connections can handle one thread concurrently."""
    with (
        PostgresEntry(postgres_url, table=entry_table, channel=entry_table) as a,
        PostgresEntry(postgres_url, table=entry_table, channel=entry_table) as b,
    ):
        for n in range(4):
            a.send(_answer("shared", n))
        held = a.receive(5)
        assert [r.message["question_id"] for r in held] == ["q0"]
        assert b.receive(5) == []
        a.ack(held[0])
        [next_one] = b.receive(5)
        assert next_one.message["question_id"] == "q1"
        b.ack(next_one)


def test_options_are_checked_and_the_password_never_shown(postgres_url: str) -> None:
    """If this fails, a bad option is accepted or an error leaks the password."""
    with pytest.raises(
        ConfigError, match=r"entry point 'postgres': option 'max_attempts': .* \(got 0\)"
    ):
        PostgresEntry(postgres_url, max_attempts=0)
    with pytest.raises(
        ConfigError, match=r"entry point 'postgres': option 'table': .*\(got 'bad name'\)"
    ):
        PostgresEntry(postgres_url, table="bad name")
    with pytest.raises(ConfigError, match=r"option 'channel': .*\(got 'no-dash'\)"):
        entry("postgres", url=postgres_url, channel="no-dash")
    with pytest.raises(
        ConfigError, match=r"entry point 'postgres': option 'url': not a libpq connection string"
    ) as error:
        entry("postgres", url="host=db password='s3cret")
    assert "s3cret" not in str(error.value)
    with pytest.raises(
        ConfigError,
        match=r"entry point 'postgres': unknown option 'max_retry'; did you mean 'max_retry_delay'\?",
    ):
        entry("postgres", url=postgres_url, max_retry=5)
    built = entry("postgres", url="postgresql://app:s3cret@127.0.0.1:1/x")
    assert "s3cret" not in repr(built)
    assert isinstance(built, PostgresEntry)


def test_reply_to_names_the_table_and_refuses_a_password(
    postgres_url: str, entry_table: str
) -> None:
    with PostgresEntry(postgres_url, table=entry_table, channel=entry_table) as messages:
        if urlsplit(postgres_url).password:
            with pytest.raises(ConfigError, match="a password in the URL"):
                messages.reply_to()
        else:
            assert messages.reply_to()["table"] == entry_table
    with (
        PostgresEntry("postgresql://agent:pw-9@db.example/agents", table=entry_table) as guarded,
        pytest.raises(ConfigError) as caught,
    ):
        guarded.reply_to()
    assert "pw-9" not in str(caught.value)
