"""SnsAnnounce against a real moto server: SNS -> SQS delivery, filter policies, FIFO, batches."""

from __future__ import annotations

import json
import logging
import tomllib
from importlib.metadata import version
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from agent_wait.core import (
    AnnounceFailed,
    BatchEntryFailed,
    ConfigError,
    DeliveryFailed,
    Question,
    Receipt,
    announcer,
    announcers_from_config,
    apublish,
    build_envelope,
    publish,
)
from agent_wait.sns import SnsAnnounce
from tests.aws_moto import (
    ACCOUNT,
    REGION,
    Aws,
    count_requests,
    create_queue,
    drain,
    free_port,
    inject_error,
    questions,
    refuse_entries,
)
from tests.config_check import assert_connect_tells_right_from_wrong


def _topic_with_queue(
    aws: Aws,
    name: str = "approvals",
    *,
    raw: bool = True,
    filter_policy: dict[str, Any] | None = None,
) -> tuple[Any, str, Any, str]:
    """A topic with one SQS subscription; returns (sns, topic_arn, sqs, queue_url)."""
    sns, sqs = aws.client("sns"), aws.client("sqs")
    fifo = name.endswith(".fifo")
    topic_arn = sns.create_topic(Name=name, Attributes={"FifoTopic": "true"} if fifo else {})[
        "TopicArn"
    ]
    url = _subscribe(sns, sqs, topic_arn, name, raw=raw, filter_policy=filter_policy)
    return sns, topic_arn, sqs, url


def _subscribe(
    sns: Any,
    sqs: Any,
    topic_arn: str,
    queue: str,
    *,
    raw: bool,
    filter_policy: dict[str, Any] | None,
) -> str:
    url, queue_arn = create_queue(sqs, queue)
    attributes = {"RawMessageDelivery": "true" if raw else "false"}
    if filter_policy is not None:
        attributes["FilterPolicy"] = json.dumps(filter_policy)
    sns.subscribe(TopicArn=topic_arn, Protocol="sqs", Endpoint=queue_arn, Attributes=attributes)
    return url


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {n: v["StringValue"] for n, v in message.get("MessageAttributes", {}).items()}


def test_raw_delivery_to_sqs_carries_the_envelope_and_attributes(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    with SnsAnnounce(topic_arn, **aws.options) as announce:
        report = publish(questions(1, tags={"approver_group": "finance"}), "order-4471", announce)
    assert report.ok, report.failures
    (message,) = drain(sqs, url)
    assert json.loads(message["Body"]) == report.envelopes[0].to_dict()
    assert _attributes(message) == {
        "type": "wait.created",
        "thread_id": "order-4471",
        "approver_group": "finance",
    }


def test_the_sns_notification_has_subject_message_and_attributes(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws, raw=False)
    report = publish(
        questions(1, tags={"approver_group": "finance"}),
        "t-1",
        SnsAnnounce(topic_arn, **aws.options),
    )
    assert report.ok, report.failures
    (message,) = drain(sqs, url)
    notification = json.loads(message["Body"])
    assert notification["TopicArn"] == topic_arn
    assert notification["Subject"] == "wait.created: issue_refund"
    assert json.loads(notification["Message"]) == report.envelopes[0].to_dict()
    assert notification["MessageAttributes"] == {
        "type": {"Type": "String", "Value": "wait.created"},
        "thread_id": {"Type": "String", "Value": "t-1"},
        "approver_group": {"Type": "String", "Value": "finance"},
    }


def test_a_filter_policy_on_a_tag_routes_the_question(aws: Aws) -> None:
    sns, topic_arn, sqs, finance = _topic_with_queue(
        aws, filter_policy={"approver_group": ["finance"]}
    )
    legal = _subscribe(
        sns, sqs, topic_arn, "legal", raw=True, filter_policy={"approver_group": ["legal"]}
    )
    announce = SnsAnnounce(topic_arn, client=sns)
    assert publish(questions(1, tags={"approver_group": "finance"}), "t-1", announce).ok
    assert publish(questions(1, tags={"approver_group": "legal"}), "t-2", announce).ok
    assert [json.loads(m["Body"])["thread_id"] for m in drain(sqs, finance)] == ["t-1"]
    assert [json.loads(m["Body"])["thread_id"] for m in drain(sqs, legal)] == ["t-2"]


async def test_async_path_uses_its_own_long_lived_client(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    announce = SnsAnnounce(topic_arn, **aws.options)
    one = await apublish(questions(1), "t-1", announce)
    many = await apublish(questions(3), "t-2", announce)
    await announce.aclose()
    assert one.ok, one.failures
    assert many.ok, many.failures
    bodies = {json.loads(m["Body"])["event_id"]: json.loads(m["Body"]) for m in drain(sqs, url)}
    assert bodies == {e.event_id: e.to_dict() for e in one.envelopes + many.envelopes}


def test_many_envelopes_go_out_through_publish_batch(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    batches = count_requests(sns, "sns", "PublishBatch")
    singles = count_requests(sns, "sns", "Publish")
    report = publish(questions(23), "t-1", SnsAnnounce(topic_arn, client=sns))
    assert report.ok, report.failures
    assert [len(c["PublishBatchRequestEntries"]) for c in batches] == [10, 10, 3]
    assert singles == []
    bodies = {json.loads(m["Body"])["question_id"]: json.loads(m["Body"]) for m in drain(sqs, url)}
    assert bodies == {e.question_id: e.to_dict() for e in report.envelopes}


async def test_async_batches_use_the_injected_async_client(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    async with aws.aclient("sns") as client:
        batches = count_requests(client, "sns", "PublishBatch")
        report = await apublish(questions(11), "t-1", SnsAnnounce(topic_arn, async_client=client))
    assert report.ok, report.failures
    assert [len(c["PublishBatchRequestEntries"]) for c in batches] == [10, 1]
    assert len(drain(sqs, url)) == 11


def test_batches_are_cut_at_256_kib_of_utf8(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    batches = count_requests(sns, "sns", "PublishBatch")
    # 50,000 "é" are 100,000 bytes: two fit in 256 KiB, three do not.
    report = publish(questions(5, payload="é" * 50_000), "t-1", SnsAnnounce(topic_arn, client=sns))
    assert report.ok, report.failures
    assert [len(c["PublishBatchRequestEntries"]) for c in batches] == [2, 2, 1]
    assert len(drain(sqs, url)) == 5


def test_attributes_count_toward_the_limit_and_fail_only_their_envelope(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    announce = SnsAnnounce(topic_arn, client=sns)
    small = build_envelope(questions(1)[0], "t-1")
    # Grow the note until the envelope alone fits 256 KiB but not with subject and attributes.
    base = len(build_envelope(questions(1)[0], "t-1").to_json())
    big = build_envelope(questions(1, payload="x" * (262_144 - base - 10))[0], "t-1")
    assert len(big.to_json()) <= 262_144
    outcomes = announce.deliver_many([big, small])
    assert isinstance(outcomes[0], ValueError)
    assert "(message, subject and attributes), over SNS's 262144-byte limit" in str(outcomes[0])
    assert isinstance(outcomes[1], Receipt)
    report = publish([questions(1, payload="x" * (262_144 - base - 10))[0]], "t-1", announce)
    assert "over SNS's 262144-byte limit" in (report.failures[0].error or "")
    assert [json.loads(m["Body"])["event_id"] for m in drain(sqs, url)] == [small.event_id]


def test_fifo_topic_dedupes_a_republish_into_a_fifo_queue(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws, "approvals.fifo")
    announce = SnsAnnounce(topic_arn, client=sns)
    first = publish(questions(2), "order-4471", announce)
    again = publish(questions(2), "order-4471", announce)
    assert first.ok, first.failures
    assert again.ok, again.failures
    messages = drain(sqs, url)
    bodies = {json.loads(m["Body"])["question_id"]: json.loads(m["Body"]) for m in messages}
    assert bodies == {e.question_id: e.to_dict() for e in first.envelopes}
    assert {m["Attributes"]["MessageGroupId"] for m in messages} == {"order-4471"}


def test_fifo_ids_are_sent_within_sns_rules(aws: Aws) -> None:
    sns, topic_arn, _, _ = _topic_with_queue(aws, "approvals.fifo")
    sent = count_requests(sns, "sns", "Publish")
    thread = "commande n° 4471"
    assert publish(questions(1), thread, SnsAnnounce(topic_arn, client=sns)).ok
    (call,) = sent
    assert len(call["MessageGroupId"]) == 64
    assert call["MessageGroupId"].isalnum()
    assert call["MessageDeduplicationId"] == "wait.created:commande%20n%C2%B0%204471:q0"


def test_subject_is_ascii_and_short(aws: Aws) -> None:
    sns, topic_arn, _, _ = _topic_with_queue(aws)
    sent = count_requests(sns, "sns", "Publish")
    bare = Question(question_id="é" * 120, question={"value": "interrupt"})  # no source
    assert publish([bare], "t-1", SnsAnnounce(topic_arn, client=sns)).ok
    (call,) = sent
    assert call["Subject"] == "wait.created: " + "?" * 82 + "..."
    assert len(call["Subject"]) == 99


def test_the_ten_attribute_rule(aws: Aws, caplog: pytest.LogCaptureFixture) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    tags = {f"tag{i:02d}": f"v{i}" for i in range(9)} | {"bad name": "x", "empty": ""}
    with caplog.at_level(logging.WARNING, logger="agent_wait.sns"):
        assert publish(questions(1, tags=tags), "t-1", SnsAnnounce(topic_arn, **aws.options)).ok
    (message,) = drain(sqs, url)
    assert set(_attributes(message)) == {"type", "thread_id", *[f"tag{i:02d}" for i in range(8)]}
    (record,) = [r for r in caplog.records if r.name == "agent_wait.sns._announcer"]
    for dropped in ("'tag08'", "'bad name'", "'empty'"):
        assert dropped in record.getMessage()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"topic_arn": "approvals"},
            "announcer 'sns': option 'topic_arn': expected an SNS topic ARN",
        ),
        (
            {"topic_arn": "arn:aws:sqs:us-east-1:123456789012:q"},
            "option 'topic_arn': expected an SNS",
        ),
        ({"attributes": {"Amazon.x": "1"}}, "option 'attributes': 'Amazon.x' is not a valid"),
        ({"attributes": {"x.": "1"}}, "option 'attributes': 'x.' is not a valid"),
        ({"attributes": {"type": "1"}}, "option 'attributes': 'type' is reserved"),
        ({"attributes": {"a": ""}}, "option 'attributes': 'a' must be a non-empty string"),
        ({"region": 3}, "option 'region': Input should be a valid string \\(got 3\\)"),
    ],
)
def test_invalid_options_are_refused_by_name(
    aws: Aws, options: dict[str, Any], message: str
) -> None:
    settings = {"topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:approvals", **aws.options, **options}
    with pytest.raises(ConfigError, match=message):
        announcer("sns", **settings)


def test_the_region_comes_from_the_topic_arn(aws: Aws) -> None:
    announce = SnsAnnounce(f"arn:aws:sns:eu-central-1:{ACCOUNT}:approvals")
    assert announce.clients.sync().meta.region_name == "eu-central-1"


def test_a_missing_topic_is_reported_and_strict_raises(aws: Aws) -> None:
    announce = SnsAnnounce(f"arn:aws:sns:{REGION}:{ACCOUNT}:nowhere", **aws.options)
    report = publish(questions(3), "t-1", announce)
    assert len(report.failures) == 3
    assert all("NotFound" in (d.error or "") for d in report.failures)
    with pytest.raises(AnnounceFailed):
        publish(questions(1), "t-1", announce, strict=True)


async def test_a_missing_topic_is_reported_on_the_async_path(aws: Aws) -> None:
    announce = SnsAnnounce(f"arn:aws:sns:{REGION}:{ACCOUNT}:nowhere", **aws.options)
    with pytest.raises(AnnounceFailed) as info:
        await apublish(questions(2), "t-1", announce, strict=True)
    await announce.aclose()
    assert len(info.value.report.failures) == 2


@pytest.mark.parametrize("asynchronous", [False, True])
async def test_a_server_that_is_down_is_reported(
    aws: Aws, monkeypatch: pytest.MonkeyPatch, asynchronous: bool
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    announce = SnsAnnounce(
        f"arn:aws:sns:{REGION}:{ACCOUNT}:approvals", endpoint_url=f"http://127.0.0.1:{free_port()}"
    )
    if asynchronous:
        report = await apublish(questions(2), "t-1", announce)
        await announce.aclose()
    else:
        report = publish(questions(2), "t-1", announce)
    assert len(report.failures) == 2
    assert all("Could not connect" in (d.error or "") for d in report.failures)
    if not asynchronous:
        exception = report.failures[0].exception
        assert isinstance(exception, DeliveryFailed)
        assert exception.retryable
        assert isinstance(exception.__cause__, EndpointConnectionError)


@pytest.mark.parametrize(("code", "status"), [("AuthorizationError", 403), ("Throttling", 400)])
def test_access_denied_and_throttling_are_reported(aws: Aws, code: str, status: int) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    sns = aws.client("sns", max_attempts=1)
    inject_error(sns, "sns", "Publish", code=code, status=status)
    with pytest.raises(AnnounceFailed) as info:
        publish(questions(1), "t-1", SnsAnnounce(topic_arn, client=sns), strict=True)
    exception = info.value.report.failures[0].exception
    assert isinstance(exception, DeliveryFailed)
    assert isinstance(exception.__cause__, ClientError)
    assert exception.code == code
    assert exception.retryable is code.startswith(("Throttling", "Provisioned"))
    assert drain(sqs, url) == []


@pytest.mark.parametrize("code", ["AuthorizationError", "Throttling"])
async def test_access_denied_and_throttling_are_reported_on_the_async_path(
    aws: Aws, code: str
) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    async with aws.aclient("sns", max_attempts=1) as client:
        inject_error(client, "sns", "PublishBatch", code=code)
        report = await apublish(questions(2), "t-1", SnsAnnounce(topic_arn, async_client=client))
    assert [d.ok for d in report.deliveries] == [False, False]
    assert all(code in (d.error or "") for d in report.failures)
    assert drain(sqs, url) == []


def test_configured_by_name_from_toml(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    config = tomllib.loads(
        f"""
        [[announce]]
        use = "sns"
        topic_arn = "{topic_arn}"
        endpoint_url = "{aws.url}"
        attributes = {{ app = "billing" }}
        """
    )
    (announce,) = announcers_from_config(config["announce"])
    assert isinstance(announce, SnsAnnounce)
    report = publish(questions(1), "t-1", announce)
    assert report.ok, report.failures
    assert report.deliveries[0].announcer == "sns"
    (message,) = drain(sqs, url)
    assert _attributes(message)["app"] == "billing"


def test_config_check_connect_reads_the_topic_and_fails_on_a_wrong_port(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    topic_arn = aws.client("sns").create_topic(Name="approvals")["TopicArn"]
    right = {"use": "sns", "topic_arn": topic_arn, **aws.options}
    wrong_port = {**right, "endpoint_url": f"http://127.0.0.1:{free_port()}"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, wrong_port)
    assert "EndpointConnectionError" in lines[4]
    missing = {**right, "topic_arn": f"arn:aws:sns:{REGION}:{ACCOUNT}:no-such-topic"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, missing)
    assert "NotFound" in lines[4]


def test_an_entry_refused_for_no_fault_of_its_own_is_retried_once(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    batches = count_requests(sns, "sns", "PublishBatch")
    refuse_entries(sns, "sns", "PublishBatch", question_ids=["q1"], code="InternalError")
    report = publish(questions(3), "t-1", SnsAnnounce(topic_arn, client=sns))
    assert report.ok, report.failures
    assert [[e["Id"] for e in call["PublishBatchRequestEntries"]] for call in batches] == [
        ["0", "1", "2"],
        ["1"],
    ]
    assert [d.attempts for d in report.deliveries] == [1, 2, 1]
    assert sorted(json.loads(m["Body"])["question_id"] for m in drain(sqs, url)) == [
        "q0",
        "q1",
        "q2",
    ]


def test_an_entry_refused_twice_is_reported_and_one_at_fault_at_once(aws: Aws) -> None:
    sns, topic_arn, sqs, url = _topic_with_queue(aws)
    batches = count_requests(sns, "sns", "PublishBatch")
    refuse_entries(sns, "sns", "PublishBatch", question_ids=["q1"], times=None)
    refuse_entries(
        sns,
        "sns",
        "PublishBatch",
        question_ids=["q0"],
        code="InvalidParameter",
        times=1,
        sender_fault=True,
    )
    report = publish(questions(3), "t-1", SnsAnnounce(topic_arn, client=sns))
    failures = {d.question_id: d for d in report.failures}
    assert sorted(failures) == ["q0", "q1"]
    at_fault, unlucky = failures["q0"].exception, failures["q1"].exception
    assert isinstance(at_fault, BatchEntryFailed)
    assert (at_fault.code, at_fault.retryable, failures["q0"].attempts) == (
        "InvalidParameter",
        False,
        1,
    )
    assert isinstance(unlucky, BatchEntryFailed)
    assert (unlucky.code, unlucky.retryable, failures["q1"].attempts) == (
        "ServiceUnavailable",
        True,
        2,
    )
    assert [[e["Id"] for e in call["PublishBatchRequestEntries"]] for call in batches] == [
        ["0", "1", "2"],
        ["1"],
    ]
    assert [json.loads(m["Body"])["question_id"] for m in drain(sqs, url)] == ["q2"]


async def test_the_async_path_retries_a_refused_entry_the_same_way(aws: Aws) -> None:
    _, topic_arn, sqs, url = _topic_with_queue(aws)
    async with aws.aclient("sns") as client:
        refused = refuse_entries(client, "sns", "PublishBatch", question_ids=["q2"])
        report = await apublish(questions(3), "t-1", SnsAnnounce(topic_arn, async_client=client))
    assert report.ok, report.failures
    assert refused == [["q2"]]
    assert [d.attempts for d in report.deliveries] == [1, 1, 2]
    assert len(drain(sqs, url)) == 3


def test_its_clients_retry_in_standard_mode_and_name_agent_wait(aws: Aws) -> None:
    # Built by agent-wait-aws like every AWS announcer's; the requests are checked on SQS.
    announce = SnsAnnounce(f"arn:aws:sns:{REGION}:{ACCOUNT}:approvals", **aws.options)
    config = announce.clients.sync().meta.config
    assert config.retries == {"mode": "standard"}
    assert config.user_agent_extra == f"agent-wait/{version('agent-wait-core')}"
