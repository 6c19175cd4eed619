"""SqsAnnounce against a real moto server: bodies, attributes, FIFO, batches, limits, failures."""

from __future__ import annotations

import json
import logging
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
from agent_wait.core.transport import fit_identifier
from agent_wait.sqs import SqsAnnounce
from tests.aws_moto import (
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


def _bodies(messages: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    parsed = [json.loads(m["Body"]) for m in messages]
    return {body["question_id"]: body for body in parsed}


def _attributes(message: dict[str, Any]) -> dict[str, str]:
    return {
        name: value["StringValue"] for name, value in message.get("MessageAttributes", {}).items()
    }


def test_one_question_lands_as_the_contract_envelope(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    with SqsAnnounce(url, **aws.options) as announce:
        report = publish(questions(1, tags={"approver_group": "finance"}), "order-4471", announce)
    assert report.ok, report.failures
    (message,) = drain(sqs, url)
    assert json.loads(message["Body"]) == report.envelopes[0].to_dict()
    assert _attributes(message) == {
        "type": "wait.created",
        "thread_id": "order-4471",
        "approver_group": "finance",
    }
    assert all(v["DataType"] == "String" for v in message["MessageAttributes"].values())


async def test_async_path_delivers_through_its_own_client_and_closes_it(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    announce = SqsAnnounce(url, **aws.options)
    first = await apublish(questions(1), "t-1", announce)
    second = await apublish(questions(3), "t-2", announce)
    client = await announce.clients.async_client()
    assert client is await announce.clients.async_client()  # one long-lived client, reused
    await announce.aclose()
    assert first.ok, first.failures
    assert second.ok, second.failures
    bodies = [json.loads(m["Body"]) for m in drain(sqs, url)]
    expected = [e.to_dict() for e in first.envelopes + second.envelopes]
    assert sorted(bodies, key=lambda b: b["event_id"]) == sorted(
        expected, key=lambda b: b["event_id"]
    )
    # After aclose the announcer opens a fresh client when used again.
    assert (await apublish(questions(1), "t-3", announce)).ok
    await announce.aclose()


def test_many_envelopes_go_out_in_batches_of_ten(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    singles = count_requests(sqs, "sqs", "SendMessage")
    report = publish(questions(23), "t-1", SqsAnnounce(url, client=sqs))
    assert report.ok, report.failures
    assert [len(call["Entries"]) for call in batches] == [10, 10, 3]
    assert singles == []
    received = _bodies(drain(sqs, url))
    assert received == {e.question_id: e.to_dict() for e in report.envelopes}


async def test_async_batches_use_the_injected_async_client(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    async with aws.aclient("sqs") as client:
        batches = count_requests(client, "sqs", "SendMessageBatch")
        announce = SqsAnnounce(url, async_client=client, region="us-east-1")
        report = await apublish(questions(12), "t-1", announce)
        await announce.aclose()
        # An injected client belongs to its owner: aclose leaves it usable.
        await client.get_queue_url(QueueName="approvals")
    assert report.ok, report.failures
    assert [len(call["Entries"]) for call in batches] == [10, 2]
    assert len(drain(sqs, url)) == 12


async def test_injected_sync_client_serves_the_async_path_in_a_thread(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    report = await apublish(questions(2), "t-1", SqsAnnounce(url, client=sqs))
    assert report.ok, report.failures
    assert len(batches) == 1


def test_batches_are_cut_by_utf8_bytes_and_an_oversized_message_fails_alone(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    announce = SqsAnnounce(url, client=sqs)
    # 300,000 "é" are 600,000 bytes: moto counts characters, SQS counts bytes.
    big = [build_envelope(q, "t-1") for q in questions(2, payload="é" * 300_000)]
    huge = build_envelope(questions(1, payload="é" * 530_000)[0], "t-1")
    small = build_envelope(questions(1)[0], "t-1")
    outcomes = announce.deliver_many([big[0], huge, big[1], small])
    assert isinstance(outcomes[0], Receipt)
    assert isinstance(outcomes[2], Receipt)
    assert isinstance(outcomes[3], Receipt)
    assert isinstance(outcomes[1], ValueError)
    assert "over SQS's 1048576-byte limit" in str(outcomes[1])
    assert [len(call["Entries"]) for call in batches] == [1, 2]
    assert len(drain(sqs, url)) == 3


def test_fifo_queue_gets_group_and_dedupe_ids_and_drops_a_republish(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals.fifo")
    announce = SqsAnnounce(url, client=sqs)
    first = publish(questions(2), "order-4471", announce)
    again = publish(questions(2), "order-4471", announce)  # same question ids, fresh event ids
    assert first.ok, first.failures
    assert again.ok, again.failures
    messages = drain(sqs, url)
    assert len(messages) == 2
    assert _bodies(messages) == {e.question_id: e.to_dict() for e in first.envelopes}
    for message in messages:
        system = message["Attributes"]
        assert system["MessageGroupId"] == "order-4471"
        body = json.loads(message["Body"])
        assert system["MessageDeduplicationId"] == f"wait.created:order-4471:{body['question_id']}"


def test_fifo_ids_outside_sqs_rules_are_hashed_and_the_group_can_be_fixed(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals.fifo")
    thread = "commande n° 4471"  # a space and a non-ASCII character: not a valid group id
    question = Question(question_id="q" * 130, question={"function": "f", "args": {}})
    assert publish([question], thread, SqsAnnounce(url, client=sqs)).ok
    assert publish(questions(1), "t-2", SqsAnnounce(url, client=sqs, message_group_id="all")).ok
    first, second = drain(sqs, url)
    assert first["Attributes"]["MessageGroupId"] == fit_identifier(thread)
    assert len(first["Attributes"]["MessageGroupId"]) == 64
    assert first["Attributes"]["MessageDeduplicationId"] == fit_identifier(
        "wait.created:commande%20n%C2%B0%204471:" + "q" * 130
    )
    assert json.loads(first["Body"])["thread_id"] == thread
    assert second["Attributes"]["MessageGroupId"] == "all"


def test_attributes_follow_the_ten_attribute_rule(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    tags = {f"tag{i:02d}": f"v{i}" for i in range(9)}
    tags.update({"bad name": "x", "empty": "", "AWS.reserved": "x"})
    announce = SqsAnnounce(url, client=sqs, attributes={"app": "billing"})
    with caplog.at_level(logging.WARNING, logger="agent_wait.sqs"):
        assert publish(questions(1, tags=tags), "t-1", announce).ok
    (message,) = drain(sqs, url)
    assert set(_attributes(message)) == {
        "type",
        "thread_id",
        "app",
        *[f"tag{i:02d}" for i in range(7)],
    }
    assert _attributes(message)["app"] == "billing"
    (record,) = [r for r in caplog.records if r.name == "agent_wait.sqs._announcer"]
    for dropped in ("'tag07'", "'tag08'", "'bad name'", "'empty'", "'AWS.reserved'"):
        assert dropped in record.getMessage()
    assert "v8" not in record.getMessage()  # names only, never values


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"queue_url": "approvals"},
            "announcer 'sqs': option 'queue_url': expected an SQS queue URL",
        ),
        ({"attributes": {"AWS.app": "x"}}, "option 'attributes': 'AWS.app' is not a valid"),
        ({"attributes": {"a..b": "x"}}, "option 'attributes': 'a..b' is not a valid"),
        (
            {"attributes": {f"a{i}": "x" for i in range(9)}},
            "option 'attributes': 9 attributes given",
        ),
        ({"message_group_id": "g"}, "option 'message_group_id': only FIFO queues"),
        (
            {"endpoint_url": "localhost:4566"},
            "option 'endpoint_url': expected an http(s) URL (got 'localhost:4566')",
        ),
        ({"region": ""}, "option 'region': String should have at least 1 character"),
        ({"profile": "nobody"}, "option 'profile': not in the AWS config files (got 'nobody')"),
    ],
)
def test_invalid_options_are_refused_by_name(
    aws: Aws, options: dict[str, Any], message: str
) -> None:
    settings = {"queue_url": f"{aws.url}/123456789012/approvals", **aws.options, **options}
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        announcer("sqs", **settings)


def test_fifo_group_id_option_is_checked(aws: Aws) -> None:
    with pytest.raises(ConfigError, match="option 'message_group_id': expected 1-128"):
        SqsAnnounce(f"{aws.url}/123456789012/a.fifo", message_group_id="two words", **aws.options)


def test_a_missing_region_is_a_config_error(aws: Aws) -> None:
    with pytest.raises(ConfigError, match="option 'region': no AWS region"):
        SqsAnnounce(f"{aws.url}/123456789012/approvals", endpoint_url=aws.url)
    # An AWS queue URL names its region.
    announce = SqsAnnounce("https://sqs.eu-west-3.amazonaws.com/123456789012/approvals")
    assert announce.clients.sync().meta.region_name == "eu-west-3"


def test_a_profile_from_the_aws_config_file_is_used(aws: Aws, monkeypatch, tmp_path) -> None:
    config = tmp_path / "profile-config"
    config.write_text(
        "[profile moto]\nregion = us-east-1\naws_access_key_id = a\naws_secret_access_key = b\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    url, _ = create_queue(aws.client("sqs"), "approvals")
    report = publish(questions(1), "t-1", SqsAnnounce(url, endpoint_url=aws.url, profile="moto"))
    assert report.ok, report.failures


def test_an_entry_refused_for_no_fault_of_its_own_is_retried_once(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    refuse_entries(sqs, "sqs", "SendMessageBatch", question_ids=["q1"], code="InternalError")
    report = publish(questions(3), "t-1", SqsAnnounce(url, client=sqs))
    assert report.ok, report.failures
    assert [[e["Id"] for e in call["Entries"]] for call in batches] == [["0", "1", "2"], ["1"]]
    assert [d.attempts for d in report.deliveries] == [1, 2, 1]
    assert len(drain(sqs, url)) == 3


def test_an_entry_refused_twice_for_no_fault_of_its_own_is_reported(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    refuse_entries(sqs, "sqs", "SendMessageBatch", question_ids=["q1"], times=None)
    report = publish(questions(3), "t-1", SqsAnnounce(url, client=sqs))
    (failure,) = report.failures
    assert failure.question_id == "q1"
    assert isinstance(failure.exception, BatchEntryFailed)
    assert failure.exception.code == "ServiceUnavailable"
    assert failure.exception.retryable is True
    assert failure.attempts == 2
    assert len(batches) == 2
    assert sorted(_bodies(drain(sqs, url))) == ["q0", "q2"]


def test_an_entry_at_fault_is_reported_at_once_and_the_others_delivered(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    batches = count_requests(sqs, "sqs", "SendMessageBatch")
    refuse_entry(sqs, entry_id="1", times=None)
    announce = SqsAnnounce(url, client=sqs)
    report = publish(questions(3), "t-1", announce)
    (failure,) = report.failures
    assert failure.question_id == "q1"
    assert isinstance(failure.exception, BatchEntryFailed)
    assert failure.exception.code
    assert failure.exception.sender_fault is True
    assert failure.exception.retryable is False
    assert len(batches) == 1  # the same entry would be refused again: no retry
    assert sorted(_bodies(drain(sqs, url))) == ["q0", "q2"]
    with pytest.raises(AnnounceFailed) as info:
        publish(questions(3), "t-1", announce, strict=True)
    assert [d.question_id for d in info.value.report.failures] == ["q1"]


async def test_the_async_path_retries_a_refused_entry_the_same_way(aws: Aws) -> None:
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    async with aws.aclient("sqs") as client:
        refused = refuse_entries(client, "sqs", "SendMessageBatch", question_ids=["q0", "q2"])
        report = await apublish(questions(3), "t-1", SqsAnnounce(url, async_client=client))
    assert report.ok, report.failures
    assert refused == [["q0", "q2"]]
    assert [d.attempts for d in report.deliveries] == [2, 1, 2]
    assert sorted(_bodies(drain(sqs, url))) == ["q0", "q1", "q2"]


def refuse_entry(sqs: Any, *, entry_id: str, times: int | None) -> None:
    """Fault injection through the real server: an out-of-range delay makes SQS refuse one entry."""
    done: list[int] = []

    def delay(params: dict[str, Any], **_: Any) -> None:
        if times is not None and len(done) >= times:
            return
        for entry in params["Entries"]:
            if entry["Id"] == entry_id:
                entry["DelaySeconds"] = 901
                done.append(1)

    sqs.meta.events.register("before-parameter-build.sqs.SendMessageBatch", delay)


def test_a_missing_queue_is_reported_and_strict_raises(aws: Aws) -> None:
    announce = SqsAnnounce(f"{aws.url}/123456789012/nowhere", **aws.options)
    report = publish(questions(2), "t-1", announce)
    assert len(report.failures) == 2
    assert all("QueueDoesNotExist" in (d.error or "") for d in report.failures)
    with pytest.raises(AnnounceFailed):
        publish(questions(1), "t-1", announce, strict=True)


async def test_a_missing_queue_is_reported_on_the_async_path(aws: Aws) -> None:
    announce = SqsAnnounce(f"{aws.url}/123456789012/nowhere", **aws.options)
    report = await apublish(questions(1), "t-1", announce)
    await announce.aclose()
    (failure,) = report.failures
    assert "QueueDoesNotExist" in (failure.error or "")


def test_a_server_that_is_down_is_reported(aws: Aws, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")  # no retry backoff against a closed port
    down = f"http://127.0.0.1:{free_port()}"
    announce = SqsAnnounce(f"{down}/123456789012/approvals", endpoint_url=down, region="us-east-1")
    report = publish(questions(2), "t-1", announce)
    assert [type(d.exception) for d in report.failures] == [DeliveryFailed] * 2
    for failure in report.failures:
        assert isinstance(failure.exception, DeliveryFailed)
        assert failure.exception.retryable
        assert isinstance(failure.exception.__cause__, EndpointConnectionError)
    with pytest.raises(AnnounceFailed):
        publish(questions(1), "t-1", announce, strict=True)


async def test_a_server_that_is_down_is_reported_on_the_async_path(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    down = f"http://127.0.0.1:{free_port()}"
    announce = SqsAnnounce(f"{down}/123456789012/approvals", endpoint_url=down, region="us-east-1")
    with pytest.raises(AnnounceFailed) as info:
        await apublish(questions(1), "t-1", announce, strict=True)
    await announce.aclose()
    assert "Could not connect" in (info.value.report.failures[0].error or "")


@pytest.mark.parametrize(("code", "status"), [("AccessDenied", 403), ("ThrottlingException", 400)])
def test_access_denied_and_throttling_are_reported(aws: Aws, code: str, status: int) -> None:
    sqs = aws.client("sqs", max_attempts=2)
    url, _ = create_queue(sqs, "approvals")
    injected = inject_error(sqs, "sqs", "SendMessageBatch", code=code, status=status)
    report = publish(questions(2), "t-1", SqsAnnounce(url, client=sqs))
    assert [type(d.exception) for d in report.failures] == [type(report.failures[0].exception)] * 2
    assert isinstance(report.failures[0].exception, DeliveryFailed)
    assert isinstance(report.failures[0].exception.__cause__, ClientError)
    assert report.failures[0].exception.code == code
    assert report.failures[0].exception.retryable is code.startswith(("Throttling", "Provisioned"))
    # botocore retried the throttled request, not the denied one.
    assert len(injected) == (2 if code.startswith("Throttling") else 1)
    assert drain(sqs, url) == []


@pytest.mark.parametrize("code", ["AccessDenied", "ThrottlingException"])
async def test_access_denied_and_throttling_are_reported_on_the_async_path(
    aws: Aws, code: str
) -> None:
    url, _ = create_queue(aws.client("sqs"), "approvals")
    async with aws.aclient("sqs", max_attempts=1) as client:
        inject_error(client, "sqs", "SendMessage", code=code)
        announce = SqsAnnounce(url, async_client=client, region="us-east-1")
        with pytest.raises(AnnounceFailed) as info:
            await apublish(questions(1), "t-1", announce, strict=True)
    exception = info.value.report.failures[0].exception
    assert isinstance(exception, DeliveryFailed)
    assert isinstance(exception.__cause__, ClientError)
    assert exception.code == code
    assert exception.retryable is code.startswith(("Throttling", "Provisioned"))


def test_configured_by_name_from_toml(aws: Aws) -> None:
    import tomllib

    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals.fifo")
    config = tomllib.loads(
        f"""
        [[announce]]
        use = "sqs"
        queue_url = "{url}"
        endpoint_url = "{aws.url}"
        region = "us-east-1"
        message_group_id = "approvals"
        attributes = {{ app = "billing" }}
        """
    )
    (announce,) = announcers_from_config(config["announce"])
    assert isinstance(announce, SqsAnnounce)
    assert announce.name == "sqs"
    report = publish(questions(1), "t-1", announce)
    assert report.ok, report.failures
    assert report.deliveries[0].announcer == "sqs"
    (message,) = drain(sqs, url)
    assert message["Attributes"]["MessageGroupId"] == "approvals"
    assert _attributes(message)["app"] == "billing"


def test_config_check_connect_reads_the_queue_and_fails_on_a_wrong_port(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    url, _ = create_queue(aws.client("sqs"), "approvals")
    right = {"use": "sqs", "queue_url": url, **aws.options}
    wrong_port = {**right, "endpoint_url": f"http://127.0.0.1:{free_port()}"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, wrong_port)
    assert "EndpointConnectionError" in lines[4]
    missing = {**right, "queue_url": url.replace("approvals", "no-such-queue")}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, missing)
    assert "NonExistentQueue" in lines[4] or "QueueDoesNotExist" in lines[4]
