"""DynamoDbAnnounce and its table helpers against a real moto server."""

from __future__ import annotations

import json
import time
import tomllib
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from importlib.metadata import version
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_wait.core import (
    AnnounceFailed,
    ConfigError,
    DeliveryFailed,
    Question,
    Receipt,
    WaitPolicy,
    announcer,
    announcers_from_config,
    apublish,
    build_envelope,
    publish,
)
from agent_wait.dynamodb import DynamoDbAnnounce, create_table, open_questions_past
from tests.aws_moto import Aws, count_requests, free_port, inject_error, questions
from tests.config_check import assert_connect_tells_right_from_wrong

TABLE = "agent-wait-questions"
PUBLISHED = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


def _table(aws: Aws, **options: Any) -> Any:
    create_table(aws.client("dynamodb"), TABLE, **options)
    return aws.session.resource("dynamodb", endpoint_url=aws.url).Table(TABLE)


def _row(table: Any, thread_id: str, question_id: str) -> dict[str, Any]:
    return table.get_item(Key={"pk": f"THREAD#{thread_id}", "sk": f"WAIT#{question_id}"})["Item"]


def questions_in(table: Any) -> list[dict[str, Any]]:
    """The question rows of the table (not the audit entries beside them)."""
    return [item for item in table.scan()["Items"] if item["sk"].startswith("WAIT#")]


def _timed(question_id: str, timeout: str | None) -> Question:
    policy = WaitPolicy(timeout=timeout, default={"action": "reject"})
    return Question(question_id=question_id, question={"function": "f", "args": {}}, policy=policy)


def test_the_row_holds_every_envelope_field_with_exact_numbers(aws: Aws) -> None:
    table = _table(aws)
    nested = Question(
        question_id="q-nested",
        question={
            "function": "f",
            "args": {"ratio": 0.1, "big": 10**20, "list": [1.5, None, "", {"x": [0.25]}]},
        },
        policy=WaitPolicy(
            timeout="P3D", default={"action": "reject"}, tags={"approver_group": "finance"}
        ),
    )
    report = publish(
        [nested], "order-4471", DynamoDbAnnounce(TABLE, **aws.options), clock=lambda: PUBLISHED
    )
    assert report.ok, report.failures
    envelope = report.envelopes[0]
    row = _row(table, "order-4471", "q-nested")
    expected = json.loads(envelope.to_json(), parse_float=Decimal)
    assert row == {
        "pk": "THREAD#order-4471",
        "sk": "WAIT#q-nested",
        "status": "open",
        "dedupe_key": "wait.created:order-4471:q-nested",
        **expected,
    }
    assert row["expires_at"] == "2026-09-14T09:00:00Z"
    assert row["question"]["args"]["ratio"] == Decimal("0.1")  # not Decimal(0.1)'s binary noise


def test_a_question_without_deadline_gets_the_far_future_sentinel(aws: Aws) -> None:
    table = _table(aws)
    assert publish([_timed("q-open", None)], "t-1", DynamoDbAnnounce(TABLE, **aws.options)).ok
    assert _row(table, "t-1", "q-open")["expires_at"] == "9999-12-31T23:59:59Z"
    assert open_questions_past(table, datetime(9999, 1, 1, tzinfo=UTC)) == []


def test_a_republish_never_overwrites_the_row(aws: Aws) -> None:
    table = _table(aws)
    announce = DynamoDbAnnounce(TABLE, **aws.options)
    first = publish(questions(2), "t-1", announce)
    assert first.ok, first.failures
    table.update_item(
        Key={"pk": "THREAD#t-1", "sk": "WAIT#q0"},
        UpdateExpression="SET #s = :answered",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":answered": "answered"},
    )
    before = _row(table, "t-1", "q0")
    again = publish(questions(2), "t-1", announce)
    assert again.ok, again.failures  # a row that exists counts as delivered
    assert _row(table, "t-1", "q0") == before
    assert _row(table, "t-1", "q0")["event_id"] == first.envelopes[0].event_id
    assert _row(table, "t-1", "q1")["event_id"] == first.envelopes[1].event_id


def test_open_questions_past_queries_the_index_for_overdue_open_rows(aws: Aws) -> None:
    table = _table(aws)
    announce = DynamoDbAnnounce(TABLE, **aws.options)
    asked = [
        _timed("hour", "PT1H"),
        _timed("days", "P3D"),
        _timed("never", None),
        _timed("min", "PT1M"),
    ]
    report = publish(asked, "t-1", announce, clock=lambda: PUBLISHED)
    assert report.ok, report.failures
    assert publish([_timed("other", "PT2H")], "t-2", announce, clock=lambda: PUBLISHED).ok
    table.update_item(
        Key={"pk": "THREAD#t-1", "sk": "WAIT#hour"},
        UpdateExpression="SET #s = :a",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":a": "answered"},
    )
    overdue = open_questions_past(table, PUBLISHED + timedelta(hours=3))
    assert [e.question_id for e in overdue] == ["min", "other"]  # oldest deadline first
    by_id = {e.event_id: e for e in report.envelopes}
    assert overdue[0].to_dict() == by_id[overdue[0].event_id].to_dict()
    assert [e.question_id for e in open_questions_past(table, PUBLISHED)] == []
    assert {e.question_id for e in open_questions_past(table)} == {"min", "other", "days"}


def test_open_questions_past_reads_every_page(aws: Aws) -> None:
    table = _table(aws)
    publish(
        [_timed(f"q{i}", "PT1M") for i in range(5)],
        "t-1",
        DynamoDbAnnounce(TABLE, **aws.options),
        clock=lambda: PUBLISHED,
    )
    pages = count_requests(table.meta.client, "dynamodb", "Query")
    overdue = open_questions_past(table, PUBLISHED + timedelta(days=1), page_size=2)
    assert sorted(e.question_id for e in overdue) == [f"q{i}" for i in range(5)]
    assert len(pages) == 3
    with pytest.raises(ValueError, match="page_size: expected a positive"):
        open_questions_past(table, page_size=0)


def test_envelopes_round_trip_through_the_table(aws: Aws) -> None:
    table = _table(aws)
    question = Question(
        question_id="q-float",
        question={
            "function": "f",
            "args": {"ratio": 0.5, "whole": 2.0, "n": 41000, "deep": [{"a": [1.25]}]},
        },
        policy=WaitPolicy(
            timeout="PT1M", default={"action": "reject", "score": 0.75}, answer_ttl="PT15M"
        ),
    )
    report = publish(
        [question], "t-1", DynamoDbAnnounce(TABLE, **aws.options), clock=lambda: PUBLISHED
    )
    (envelope,) = open_questions_past(table, PUBLISHED + timedelta(hours=1))
    assert envelope == report.envelopes[0]
    assert envelope.to_dict() == report.envelopes[0].to_dict()


def test_ttl_attribute_is_epoch_seconds_after_the_deadline(aws: Aws) -> None:
    table = _table(aws, ttl_attribute="ttl")
    client = aws.client("dynamodb")
    ttl = client.describe_time_to_live(TableName=TABLE)["TimeToLiveDescription"]
    assert ttl["AttributeName"] == "ttl"
    announce = DynamoDbAnnounce(TABLE, ttl_attribute="ttl", ttl_after="P1D", **aws.options)
    before = int(time.time())
    report = publish(
        [_timed("timed", "PT1H"), _timed("open", None)], "t-1", announce, clock=lambda: PUBLISHED
    )
    after = int(time.time())
    assert report.ok, report.failures
    assert _row(table, "t-1", "timed")["ttl"] == int(
        (PUBLISHED + timedelta(hours=1, days=1)).timestamp()
    )
    assert before + 86_400 <= _row(table, "t-1", "open")["ttl"] <= after + 86_400
    default = DynamoDbAnnounce(TABLE, ttl_attribute="expire_row", **aws.options)
    assert publish([_timed("d", "PT1H")], "t-2", default, clock=lambda: PUBLISHED).ok
    thirty_days = (PUBLISHED + timedelta(hours=1, days=30)).timestamp()
    assert _row(table, "t-2", "d")["expire_row"] == int(thirty_days)


def test_create_table_accepts_a_resource(aws: Aws) -> None:
    resource = aws.session.resource("dynamodb", endpoint_url=aws.url)
    description = create_table(resource, "from-resource")
    assert description["TableName"] == "from-resource"
    (index,) = description["GlobalSecondaryIndexes"]
    assert index["IndexName"] == "by_status"
    assert [k["AttributeName"] for k in index["KeySchema"]] == ["status", "expires_at"]


def test_an_oversized_item_and_an_oversized_key_fail_alone(aws: Aws) -> None:
    table = _table(aws)
    announce = DynamoDbAnnounce(TABLE, **aws.options)
    huge = build_envelope(questions(1, payload="é" * 210_000)[0], "t-1")  # 420,000 bytes
    long_thread = build_envelope(questions(1)[0], "t" * 2100)
    fine = build_envelope(questions(1)[0], "t-2")
    outcomes = announce.deliver_many([huge, long_thread, fine])
    assert isinstance(outcomes[0], ValueError)
    assert "over DynamoDB's 409600-byte (400 KB) item limit" in str(outcomes[0])
    assert isinstance(outcomes[1], ValueError)
    assert "row key pk" in str(outcomes[1])
    assert isinstance(outcomes[2], Receipt)
    assert len(questions_in(table)) == 1


async def test_async_path_puts_through_its_own_client(aws: Aws) -> None:
    table = _table(aws)
    announce = DynamoDbAnnounce(TABLE, **aws.options)
    report = await apublish(questions(3), "t-1", announce, clock=lambda: PUBLISHED)
    again = await apublish(questions(3), "t-1", announce, clock=lambda: PUBLISHED)
    await announce.aclose()
    assert report.ok, report.failures
    assert again.ok, again.failures
    assert len(questions_in(table)) == 3
    assert _row(table, "t-1", "q2")["event_id"] == report.envelopes[2].event_id


async def test_async_path_uses_an_injected_client(aws: Aws) -> None:
    _table(aws)
    async with aws.aclient("dynamodb") as client:
        puts = count_requests(client, "dynamodb", "PutItem")
        report = await apublish(questions(2), "t-1", DynamoDbAnnounce(TABLE, async_client=client))
    assert report.ok, report.failures
    assert [p["ConditionExpression"] for p in puts] == ["attribute_not_exists(pk)"] * 2


def test_a_missing_table_is_reported_and_strict_raises(aws: Aws) -> None:
    announce = DynamoDbAnnounce("nowhere", **aws.options)
    report = publish(questions(2), "t-1", announce)
    assert [("ResourceNotFoundException" in (d.error or "")) for d in report.deliveries] == [
        True,
        True,
    ]
    with pytest.raises(AnnounceFailed):
        publish(questions(1), "t-1", announce, strict=True)


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_server_that_is_down_is_reported(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, asynchronous: bool
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    announce = DynamoDbAnnounce(
        TABLE, endpoint_url=f"http://127.0.0.1:{free_port()}", region="us-east-1"
    )
    if asynchronous:
        with pytest.raises(AnnounceFailed) as info:
            await apublish(questions(1), "t-1", announce, strict=True)
        await announce.aclose()
        report = info.value.report
    else:
        report = publish(questions(1), "t-1", announce)
    assert "Could not connect" in (report.failures[0].error or "")


@pytest.mark.parametrize(
    "code", ["AccessDeniedException", "ProvisionedThroughputExceededException"]
)
async def test_access_denied_and_throttling_are_reported(aws: Aws, code: str) -> None:
    table = _table(aws)
    client = aws.client("dynamodb", max_attempts=2)
    injected = inject_error(client, "dynamodb", "PutItem", code=code, times=1)
    report = publish(questions(2), "t-1", DynamoDbAnnounce(TABLE, client=client))
    if code == "AccessDeniedException":
        # The first put is refused, the second one still goes through.
        assert [d.ok for d in report.deliveries] == [False, True]
        error = report.failures[0].exception
        assert isinstance(error, DeliveryFailed)
        assert isinstance(error.__cause__, ClientError)
        assert error.code == code
        assert error.retryable is code.startswith(("Throttling", "Provisioned"))
    else:
        assert report.ok  # botocore retried the throttled put and it went through
    assert len(injected) == 1
    async with aws.aclient("dynamodb", max_attempts=1) as aclient:
        inject_error(aclient, "dynamodb", "PutItem", code=code)
        with pytest.raises(AnnounceFailed) as info:
            await apublish(
                questions(1), "t-9", DynamoDbAnnounce(TABLE, async_client=aclient), strict=True
            )
    assert code in (info.value.report.failures[0].error or "")
    assert "THREAD#t-9" not in {item["pk"] for item in questions_in(table)}


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"table_name": "ab"}, "announcer 'dynamodb': option 'table_name': expected 3-255"),
        ({"ttl_after": "P1D"}, "option 'ttl_after' needs ttl_attribute"),
        (
            {"ttl_attribute": "status"},
            "option 'ttl_attribute': expected an attribute name that is not",
        ),
        (
            {"ttl_attribute": "ttl", "ttl_after": "P1M"},
            "option 'ttl_after': 'P1M' uses years or months",
        ),
        (
            {"ttl_attribute": "ttl", "ttl_after": -5},
            "option 'ttl_after': duration must be positive",
        ),
    ],
)
def test_invalid_options_are_refused_by_name(
    aws: Aws, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        announcer("dynamodb", **{"table_name": TABLE, **aws.options, **options})


def test_configured_by_name_from_toml(aws: Aws) -> None:
    table = _table(aws)
    config = tomllib.loads(
        f"""
        [[announce]]
        use = "dynamodb"
        table_name = "{TABLE}"
        ttl_attribute = "ttl"
        ttl_after = "P7D"
        endpoint_url = "{aws.url}"
        region = "us-east-1"
        """
    )
    (announce,) = announcers_from_config(config["announce"])
    assert isinstance(announce, DynamoDbAnnounce)
    report = publish([_timed("q", "PT1H")], "t-1", announce, clock=lambda: PUBLISHED)
    assert report.ok, report.failures
    assert report.deliveries[0].announcer == "dynamodb"
    assert _row(table, "t-1", "q")["ttl"] == int(
        (PUBLISHED + timedelta(hours=1, days=7)).timestamp()
    )


async def test_apublish_sends_the_puts_concurrently_and_reports_each_question(aws: Aws) -> None:
    """100 questions on the async path: puts overlap, every row lands, each outcome is its own."""
    table = _table(aws)
    many = questions(100)
    # Ten questions were published (and answered) before: their puts fail the condition.
    answered_before = many[-10:]
    assert publish(answered_before, "t-1", DynamoDbAnnounce(TABLE, **aws.options), strict=True).ok
    for question in answered_before:
        table.update_item(
            Key={"pk": "THREAD#t-1", "sk": f"WAIT#{question.question_id}"},
            UpdateExpression="SET #s = :answered",
            ExpressionAttributeNames={"#s": "status"},
            ExpressionAttributeValues={":answered": "answered"},
        )
    in_flight = 0
    peak = 0

    def sending(**_: Any) -> None:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)

    def answered(**_: Any) -> None:
        nonlocal in_flight
        in_flight -= 1

    async with aws.aclient("dynamodb", max_attempts=1) as client:
        client.meta.events.register("before-send.dynamodb.PutItem", sending)
        client.meta.events.register("after-call.dynamodb.PutItem", answered)
        client.meta.events.register("after-call-error.dynamodb.PutItem", answered)
        # The first five puts sent are refused (an injected access error): only they fail.
        inject_error(client, "dynamodb", "PutItem", code="AccessDeniedException", times=5)
        report = await apublish(many, "t-1", DynamoDbAnnounce(TABLE, async_client=client))
    assert 1 < peak <= 16, f"puts in flight at once: {peak}"
    assert len(report.deliveries) == 100
    assert [d.question_id for d in report.deliveries] == [q.question_id for q in many]
    failed = report.failures
    assert len(failed) == 5
    for failure in failed:
        assert isinstance(failure.exception, DeliveryFailed)
        assert (failure.exception.code, failure.exception.retryable) == (
            "AccessDeniedException",
            False,
        )
    refused = {d.question_id for d in failed}
    assert refused.isdisjoint(q.question_id for q in answered_before)
    rows = {item["sk"]: item["status"] for item in questions_in(table)}
    assert set(rows) == {f"WAIT#{q.question_id}" for q in many if q.question_id not in refused}
    # The duplicates count as delivered and leave the answered rows as they were.
    for question in answered_before:
        assert rows[f"WAIT#{question.question_id}"] == "answered"
    assert all(d.ok for d in report.deliveries if d.question_id not in refused)


async def test_max_concurrency_one_sends_the_puts_in_order(aws: Aws) -> None:
    _table(aws)
    many = questions(20)
    async with aws.aclient("dynamodb") as client:
        sent = count_requests(client, "dynamodb", "PutItem")
        announce = DynamoDbAnnounce(TABLE, async_client=client, max_concurrency=1)
        report = await apublish(many, "t-1", announce)
    assert report.ok
    assert [call["Item"]["question_id"]["S"] for call in sent] == [q.question_id for q in many]


@pytest.mark.parametrize("value", [0, 257, True, 2.5, "many"])
def test_max_concurrency_is_validated(value: object) -> None:
    # A numeric string is accepted: values read through *_env are strings.
    with pytest.raises(ConfigError, match=r"announcer 'dynamodb': option 'max_concurrency': "):
        DynamoDbAnnounce(TABLE, client=object(), max_concurrency=value)  # pyright: ignore[reportArgumentType]


def test_config_check_connect_describes_the_table_and_fails_on_a_wrong_port(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    create_table(aws.client("dynamodb"), TABLE)
    right = {"use": "dynamodb", "table_name": TABLE, **aws.options}
    wrong_port = {**right, "endpoint_url": f"http://127.0.0.1:{free_port()}"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, wrong_port)
    assert "EndpointConnectionError" in lines[4]
    missing = {**right, "table_name": "no-such-table"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, missing)
    assert "ResourceNotFoundException" in lines[4]


def test_its_clients_retry_in_standard_mode_and_name_agent_wait(aws: Aws) -> None:
    # Built by agent-wait-aws like every AWS announcer's; the requests are checked on SQS.
    announce = DynamoDbAnnounce("approvals", **aws.options)
    config = announce.clients.sync().meta.config
    assert config.retries == {"mode": "standard"}
    assert config.user_agent_extra == f"agent-wait/{version('agent-wait-core')}"
