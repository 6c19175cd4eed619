"""PostgresAnnounce against the real PostgreSQL: rows, dedupe, NOTIFY, overdue query, failures."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.rows import dict_row

from agent_wait.core import (
    AnnounceFailed,
    BatchEntryFailed,
    ConfigError,
    DeliveryFailed,
    PublishReport,
    Question,
    WaitPolicy,
    announcer,
    announcers_from_config,
    apublish,
    default_announcers,
    publish,
)
from agent_wait.postgres import (
    PostgresAnnounce,
    acreate_schema,
    aopen_questions_past,
    create_schema,
    open_questions_past,
)
from agent_wait.testing import sample_questions
from tests.config_check import assert_connect_tells_right_from_wrong, config_check

from .conftest import Names

NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def question(
    qid: str, *, timeout: str | None = "P3D", asked_at: datetime | None = None, **extra: Any
) -> Question:
    return Question(
        question_id=qid,
        question={"function": "issue_refund", "args": {"amount": 41000, "note": "€ ✓"}, **extra},
        policy=WaitPolicy(
            timeout=timeout, default={"action": "reject"}, tags={"approver_group": "finance"}
        ),
        asked_at=asked_at,
    )


def apublish_closing(
    announce: PostgresAnnounce, questions: list[Question], thread: str = "t"
) -> PublishReport:
    """``apublish`` on a fresh loop, closing the loop's connection before the loop ends."""

    async def run() -> PublishReport:
        try:
            return await apublish(questions, thread, announce)
        finally:
            await announce.aclose()

    return asyncio.run(run())


def rows(conn: psycopg.Connection, table: str) -> list[dict[str, Any]]:
    query = sql.SQL("SELECT * FROM {} ORDER BY pk, sk").format(sql.Identifier(table))
    with conn.cursor(row_factory=dict_row) as cursor:
        return cursor.execute(query).fetchall()


def listen(conn: psycopg.Connection, channel: str) -> None:
    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel)))


def notifications(conn: psycopg.Connection, count: int) -> list[dict[str, Any]]:
    """The next ``count`` notifications (bounded wait), then whatever else already arrived."""
    got = [json.loads(n.payload) for n in conn.notifies(timeout=5, stop_after=count)]
    got += [json.loads(n.payload) for n in conn.notifies(timeout=0.3)]
    return got


@pytest.fixture
def announce(postgres_url: str, names: Names) -> Any:
    with PostgresAnnounce(postgres_url, table=names.table, channel=names.channel) as built:
        yield built


def test_row_has_the_dynamodb_shape_with_jsonb_columns(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    dated = question("q-1")
    undated = question("q-2", timeout=None)
    report = publish([dated, undated], "order-4471", announce, reply_to={"queue": "answers"})
    assert report.ok, report.failures
    first, second = rows(conn, names.table)
    for row, envelope in zip((first, second), report.envelopes, strict=True):
        body = envelope.to_dict()
        assert (row["pk"], row["sk"], row["status"]) == (
            "THREAD#order-4471",
            f"WAIT#{envelope.question_id}",
            "open",
        )
        assert row["envelope"] == body
        for field in body:
            if field != "expires_at":
                assert row[field] == body[field], field
    assert first["expires_at"] == datetime.fromisoformat(report.envelopes[0].expires_at or "")
    assert second["expires_at"] == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert second["envelope"]["expires_at"] is None
    # Nulls are SQL NULL, not JSON null.
    types = conn.execute(
        sql.SQL(
            "SELECT source IS NULL, correlation IS NULL, reply_to IS NULL FROM {} LIMIT 1"
        ).format(sql.Identifier(names.table))
    ).fetchone()
    assert types == (True, True, False)


def test_create_schema_is_idempotent_and_indexes_status_and_expiry(
    conn: psycopg.Connection, names: Names, postgres_url: str
) -> None:
    create_schema(conn, names.table)
    [indexdef] = conn.execute(
        "SELECT indexdef FROM pg_indexes WHERE tablename = %s AND indexname = %s",
        [names.table, f"{names.table}_by_status"],
    ).fetchone() or [None]
    assert indexdef is not None
    assert indexdef.endswith("(status, expires_at)")

    async def twice() -> None:
        async with await psycopg.AsyncConnection.connect(postgres_url, autocommit=True) as aconn:
            await acreate_schema(aconn, names.table)
            await acreate_schema(aconn, names.table)

    asyncio.run(twice())


def test_schema_qualified_table(conn: psycopg.Connection, postgres_url: str) -> None:
    schema = f"aw_test_{uuid.uuid4().hex[:12]}"
    conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    try:
        with PostgresAnnounce(postgres_url, table=f"{schema}.inbox", create_table=True) as announce:
            assert publish([question("q-1", timeout="PT1S", asked_at=NOW)], "t", announce).ok
        overdue = open_questions_past(conn, NOW + timedelta(seconds=2), table=f"{schema}.inbox")
        assert [e["question_id"] for e in overdue] == ["q-1"]
    finally:
        conn.execute(sql.SQL("DROP SCHEMA {} CASCADE").format(sql.Identifier(schema)))


def test_republish_is_absorbed_and_never_overwrites_the_row(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    first = publish([question("q-1")], "t", announce, strict=True)
    conn.execute(sql.SQL("UPDATE {} SET status = 'answered'").format(sql.Identifier(names.table)))
    again = publish([question("q-1")], "t", announce, strict=True)
    asynchronous = apublish_closing(announce, [question("q-1")])
    assert again.ok
    assert asynchronous.ok
    [row] = rows(conn, names.table)
    assert row["status"] == "answered"
    assert row["event_id"] == first.envelopes[0].event_id


def test_new_rows_notify_with_ids_only_and_republishes_do_not(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    listen(conn, names.channel)
    publish([question("q-1")], "order-1", announce, strict=True)
    publish([question("q-1"), question("q-2"), question("q-3")], "order-1", announce, strict=True)
    apublish_closing(announce, [question("q-3"), question("q-4")], "order-2")
    assert notifications(conn, 5) == [
        {"dedupe_key": "wait.created:order-1:q-1", "thread_id": "order-1", "question_id": "q-1"},
        {"dedupe_key": "wait.created:order-1:q-2", "thread_id": "order-1", "question_id": "q-2"},
        {"dedupe_key": "wait.created:order-1:q-3", "thread_id": "order-1", "question_id": "q-3"},
        {"dedupe_key": "wait.created:order-2:q-3", "thread_id": "order-2", "question_id": "q-3"},
        {"dedupe_key": "wait.created:order-2:q-4", "thread_id": "order-2", "question_id": "q-4"},
    ]


def test_ids_too_long_for_a_notify_payload_send_a_truncated_marker(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    listen(conn, names.channel)
    long_id = "x" * 8000  # compresses, so the key still fits the btree index
    report = publish([question(long_id)], "t", announce)
    assert report.ok, report.failures
    assert notifications(conn, 1) == [{"dedupe_key": None, "truncated": True}]


def test_open_questions_past_is_the_consumer_overdue_query(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names, postgres_url: str
) -> None:
    questions = [
        question("late-2", timeout="PT2H", asked_at=NOW),
        question("late-1", timeout="PT1H", asked_at=NOW),
        question("answered", timeout="PT1H", asked_at=NOW),
        question("later", timeout="P3D", asked_at=NOW),
        question("never", timeout=None),
    ]
    report = publish(questions, "t", announce, strict=True)
    conn.execute(
        sql.SQL("UPDATE {} SET status = 'answered' WHERE sk = 'WAIT#answered'").format(
            sql.Identifier(names.table)
        )
    )
    at = NOW + timedelta(hours=3)
    overdue = open_questions_past(conn, at, table=names.table)
    assert [e["question_id"] for e in overdue] == ["late-1", "late-2"]
    by_id = {e.question_id: e.to_dict() for e in report.envelopes}
    assert overdue == [by_id["late-1"], by_id["late-2"]]
    assert list(overdue[0]) == list(by_id["late-1"])  # contract field order
    assert open_questions_past(conn, "2026-09-11T12:00:00Z", table=names.table, limit=1) == [
        by_id["late-1"]
    ]
    assert open_questions_past(conn, NOW, table=names.table) == []
    far = [
        e["question_id"]
        for e in open_questions_past(conn, NOW + timedelta(days=30), table=names.table)
    ]
    assert far == ["late-1", "late-2", "later"]  # "never" has no expires_at

    async def read() -> list[dict[str, Any]]:
        async with await psycopg.AsyncConnection.connect(postgres_url) as aconn:
            return await aopen_questions_past(aconn, at, table=names.table)

    assert asyncio.run(read()) == overdue
    with pytest.raises(ValueError, match="now: expected an aware datetime"):
        open_questions_past(conn, datetime(2026, 1, 1), table=names.table)
    with pytest.raises(ValueError, match="limit: expected a positive integer or None, got 0"):
        open_questions_past(conn, NOW, table=names.table, limit=0)


def test_a_refused_row_fails_alone_and_its_error_quotes_no_content(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    listen(conn, names.channel)
    # JSONB cannot hold \u0000: the server refuses that row; the text thread id is refused by
    # psycopg before sending. Neither may take the other rows down.
    bad = question("q-bad", secret_note="classified\x00")
    report = publish([question("q-1"), bad, question("q-2")], "t", announce)
    nul_thread = publish([question("q-3")], "t\x00", announce)
    areport = apublish_closing(announce, [question("q-4"), bad])
    assert [d.ok for d in report.deliveries] == [True, False, True]
    assert [d.ok for d in areport.deliveries] == [True, False]
    assert not nul_thread.ok
    for failure in (report.failures[0], areport.failures[0]):
        assert isinstance(failure.exception, BatchEntryFailed)
        assert failure.exception.code == "22P05"
        assert failure.error == (
            "BatchEntryFailed: PostgreSQL refused the entry: 22P05: unsupported Unicode escape "
            "sequence (the row of question 'q-bad')"
        )
        assert "classified" not in repr(failure.error)
    assert isinstance(nul_thread.failures[0].exception, BatchEntryFailed)
    assert sorted(r["question_id"] for r in rows(conn, names.table)) == ["q-1", "q-2", "q-4"]
    assert [n["question_id"] for n in notifications(conn, 3)] == ["q-1", "q-2", "q-4"]


def test_missing_table_is_reported_and_create_table_makes_it(
    postgres_url: str, conn: psycopg.Connection
) -> None:
    table = f"agent_wait_test_{uuid.uuid4().hex[:12]}"
    try:
        with PostgresAnnounce(postgres_url, table=table) as plain:
            report = publish(sample_questions(2), "t", plain)
        assert [d.ok for d in report.deliveries] == [False, False]
        missing = report.failures[0]
        assert (missing.error or "").startswith(
            "DeliveryFailed: PostgreSQL: UndefinedTable: relation"
        )
        assert isinstance(missing.exception, DeliveryFailed)
        assert (missing.exception.code, missing.exception.retryable) == ("42P01", False)
        with PostgresAnnounce(postgres_url, table=table, create_table=True) as creating:
            assert publish(sample_questions(2), "t", creating).ok
            assert apublish_closing(creating, sample_questions(1)).ok
        assert len(rows(conn, table)) == 3
    finally:
        for dropped in (table, f"{table}_audit"):  # and the announcer's audit log beside it
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(dropped)))


def test_unreachable_server_is_reported_and_strict_raises(closed_port: int) -> None:
    with PostgresAnnounce(f"postgresql://postgres@127.0.0.1:{closed_port}/test", timeout=2) as down:
        report = publish(sample_questions(2), "t", down)
        areport = apublish_closing(down, sample_questions(1))
        with pytest.raises(AnnounceFailed):
            publish(sample_questions(1), "t", down, strict=True)
    for failure in (*report.failures, *areport.failures):
        assert (failure.error or "").startswith(
            "DeliveryFailed: PostgreSQL: OperationalError: connection failed"
        )
        assert isinstance(failure.exception, DeliveryFailed)
        assert failure.exception.retryable
    assert len(report.failures) == 2


def test_one_announcer_across_event_loops(
    announce: PostgresAnnounce, conn: psycopg.Connection, names: Names
) -> None:
    for n in range(2):
        assert apublish_closing(announce, sample_questions(1), f"t-{n}").ok
    assert publish(sample_questions(1), "t", announce).ok
    assert len(rows(conn, names.table)) == 3


def test_configured_by_name_and_from_pyproject(
    postgres_url: str,
    conn: psycopg.Connection,
    names: Names,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_DATABASE_URL", postgres_url)
    [built] = announcers_from_config(
        [{"use": "postgres", "url_env": "TEST_DATABASE_URL", "table": names.table}]
    )
    assert isinstance(built, PostgresAnnounce)
    assert (built.name, built.table, built.channel) == ("postgres", names.table, "agent_wait_inbox")
    with built:
        assert publish(sample_questions(1), "t", built).ok
    # The root conftest chdirs into tmp_path: its pyproject.toml is the configuration.
    (tmp_path / "pyproject.toml").write_text(
        f'[[tool.agent-wait.announce]]\nuse = "postgres"\nurl = "{postgres_url}"\n'
        f'table = "{names.table}"\nchannel = "{names.channel}"\n',
        encoding="utf-8",
    )
    report = publish(sample_questions(1), "t")
    for configured in default_announcers():
        configured.close()
    assert report.ok
    assert report.deliveries[0].announcer == "postgres"
    assert len(rows(conn, names.table)) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"table": "bad-name"},
            "announcer 'postgres': option 'table': expected a plain identifier",
        ),
        ({"table": "a.b.c"}, "(got 'a.b.c')"),
        ({"table": "x; DROP TABLE y"}, "(got 'x; DROP TABLE y')"),
        ({"table": "t" * 64}, "at most 63 bytes"),
        ({"channel": "1abc"}, "option 'channel': expected a plain identifier"),
        ({"channel": "ch an"}, "(got 'ch an')"),
        (
            {"url": "postgresql://host/db?bogus=1"},
            "option 'url': not a libpq connection string or URI",
        ),
        ({"url": 5}, "option 'url': Input should be a valid string (got 5)"),
        (
            {"create_table": "yes"},
            "option 'create_table': Input should be a valid boolean (got 'yes')",
        ),
        ({"timeout": 0}, "option 'timeout': Input should be greater than 0 (got 0)"),
    ],
)
def test_invalid_options_name_the_field_and_value(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        announcer("postgres", **options)
    assert message in str(raised.value)


@pytest.mark.parametrize(
    ("url", "secret"),
    [
        ("postgresql://app:hunter qz9@127.0.0.1:5432/test", "hunter qz9"),
        ('postgresql://app:hunter qz9"x@127.0.0.1/test', "hunter qz9"),
        ("host=127.0.0.1 password='hunter qz9", "hunter qz9"),
        ("host=127.0.0.1 password=hunter qz9", "hunter qz9"),
        ("postgresql://app:hunter%zzqz9@127.0.0.1/test", "hunter qz9"),
    ],
)
def test_a_malformed_url_read_through_env_never_shows_its_password(
    url: str, secret: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENT_WAIT_TEST_PG_URL", url)
    with pytest.raises(ConfigError, match="option 'url': not a libpq connection string") as raised:
        announcer("postgres", url_env="AGENT_WAIT_TEST_PG_URL")
    message = str(raised.value)
    for fragment in secret.split():
        assert fragment not in message
    assert "\n" not in message


def test_channel_none_sends_no_notification(
    postgres_url: str, conn: psycopg.Connection, names: Names
) -> None:
    listen(conn, names.channel)
    with PostgresAnnounce(postgres_url, table=names.table, channel=None) as quiet:
        assert publish(sample_questions(2), "t", quiet).ok
    assert [n.payload for n in conn.notifies(timeout=0.3)] == []
    assert len(rows(conn, names.table)) == 2


def test_config_check_connect_reaches_the_server_and_fails_on_a_wrong_port(
    postgres_url: str, names: Names, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    wrong_port = f"postgresql://postgres:s3cret@127.0.0.1:{closed_port}/test"
    lines = assert_connect_tells_right_from_wrong(
        monkeypatch,
        {"use": "postgres", "url": postgres_url, "table": names.table},
        {"use": "postgres", "url": wrong_port, "table": names.table, "timeout": 2},
    )
    assert "s3cret" not in "\n".join(lines)
    assert "Connection refused" in lines[4]


def test_config_check_connect_fails_on_a_missing_table_unless_it_is_created(
    postgres_url: str, names: Names, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = {"use": "postgres", "url": postgres_url, "table": names.table + "_missing"}
    lines = assert_connect_tells_right_from_wrong(
        monkeypatch, {"use": "postgres", "url": postgres_url, "table": names.table}, missing
    )
    assert "does not exist; create it with create_schema() or set create_table" in lines[4]
    code, lines, _ = config_check(monkeypatch, [{**missing, "create_table": True}], "--connect")
    assert code == 0
    assert lines[1].endswith("; connected")
