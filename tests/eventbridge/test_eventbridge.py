"""EventBridgeAnnounce against a real moto server: rule -> SQS target, batches, entry failures."""

from __future__ import annotations

import json
import tomllib
from importlib.metadata import version
from typing import Any

import pytest
from botocore.exceptions import ClientError

from agent_wait.core import (
    AnnounceFailed,
    BatchEntryFailed,
    ConfigError,
    DeliveryFailed,
    Receipt,
    announcer,
    announcers_from_config,
    apublish,
    build_envelope,
    publish,
)
from agent_wait.eventbridge import EventBridgeAnnounce
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

QUESTIONS = {"source": ["agent-wait"], "detail-type": ["wait.created"]}


def _bus_to_queue(
    aws: Aws,
    *,
    bus: str = "approvals",
    pattern: dict[str, Any] | None = None,
    queue: str = "approvals",
) -> tuple[Any, Any, str]:
    """A bus whose rule sends matching events to an SQS queue; returns (events, sqs, queue url)."""
    events, sqs = aws.client("events"), aws.client("sqs")
    if bus != "default":
        events.create_event_bus(Name=bus)
    url, arn = create_queue(sqs, queue)
    rule = f"to-{queue}"
    events.put_rule(Name=rule, EventBusName=bus, EventPattern=json.dumps(pattern or QUESTIONS))
    events.put_targets(Rule=rule, EventBusName=bus, Targets=[{"Id": "queue", "Arn": arn}])
    return events, sqs, url


def _details(sqs: Any, url: str) -> list[dict[str, Any]]:
    return [json.loads(m["Body"]) for m in drain(sqs, url)]


def test_a_rule_delivers_the_event_to_an_sqs_target(aws: Aws) -> None:
    _, sqs, url = _bus_to_queue(aws)
    with EventBridgeAnnounce("approvals", **aws.options) as announce:
        report = publish(questions(1, tags={"approver_group": "finance"}), "order-4471", announce)
    assert report.ok, report.failures
    (event,) = _details(sqs, url)
    assert event["source"] == "agent-wait"
    assert event["detail-type"] == "wait.created"
    assert event["detail"] == report.envelopes[0].to_dict()


def test_rules_route_on_a_tag_in_the_detail(aws: Aws) -> None:
    def on(group: str) -> dict[str, Any]:
        return {**QUESTIONS, "detail": {"tags": {"approver_group": [group]}}}

    events, sqs, finance = _bus_to_queue(aws, pattern=on("finance"), queue="finance")
    _, legal_arn = create_queue(sqs, "legal")
    events.put_rule(Name="legal", EventBusName="approvals", EventPattern=json.dumps(on("legal")))
    events.put_targets(
        Rule="legal", EventBusName="approvals", Targets=[{"Id": "q", "Arn": legal_arn}]
    )
    announce = EventBridgeAnnounce("approvals", client=events)
    assert publish(questions(1, tags={"approver_group": "legal"}), "t-legal", announce).ok
    assert publish(questions(1, tags={"approver_group": "finance"}), "t-finance", announce).ok
    assert publish(questions(1), "t-untagged", announce).ok
    assert [e["detail"]["thread_id"] for e in _details(sqs, finance)] == ["t-finance"]
    legal = sqs.get_queue_url(QueueName="legal")["QueueUrl"]
    assert [e["detail"]["thread_id"] for e in _details(sqs, legal)] == ["t-legal"]


def test_the_default_bus_by_name_and_a_bus_by_arn(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws, bus="default")
    assert publish(questions(1), "t-1", EventBridgeAnnounce("default", client=events)).ok
    arn = f"arn:aws:events:{REGION}:{ACCOUNT}:event-bus/default"
    assert publish(questions(1), "t-2", EventBridgeAnnounce(arn, endpoint_url=aws.url)).ok
    assert sorted(e["detail"]["thread_id"] for e in _details(sqs, url)) == ["t-1", "t-2"]


def test_put_events_batches_hold_ten_entries(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws)
    calls = count_requests(events, "eventbridge", "PutEvents")
    report = publish(questions(23), "t-1", EventBridgeAnnounce("approvals", client=events))
    assert report.ok, report.failures
    assert [len(c["Entries"]) for c in calls] == [10, 10, 3]
    received = {e["detail"]["question_id"]: e["detail"] for e in _details(sqs, url)}
    assert received == {e.question_id: e.to_dict() for e in report.envelopes}


def test_requests_stay_within_256_kib_and_an_oversized_entry_fails_alone(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws)
    calls = count_requests(events, "eventbridge", "PutEvents")
    announce = EventBridgeAnnounce("approvals", client=events)
    # 50,000 "é" are 100,000 bytes: two entries fit one request, three do not.
    report = publish(questions(5, payload="é" * 50_000), "t-1", announce)
    assert report.ok, report.failures
    assert [len(c["Entries"]) for c in calls] == [2, 2, 1]
    huge = build_envelope(questions(1, payload="é" * 140_000)[0], "t-2")
    fine = build_envelope(questions(1)[0], "t-2")
    outcomes = announce.deliver_many([huge, fine])
    assert isinstance(outcomes[0], ValueError)
    assert "over the 262144-byte limit" in str(outcomes[0])
    assert isinstance(outcomes[1], Receipt)
    assert len(_details(sqs, url)) == 6


def test_failed_entries_are_failures_of_their_envelopes(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws)

    def corrupt(params: dict[str, Any], **_: Any) -> None:
        # Fault injection through the real server: it refuses a Detail that is not JSON.
        params["Entries"][1]["Detail"] = "{not json"

    events.meta.events.register("before-parameter-build.eventbridge.PutEvents", corrupt)
    requests = count_requests(events, "eventbridge", "PutEvents")
    announce = EventBridgeAnnounce("approvals", client=events)
    report = publish(questions(3), "t-1", announce)
    (failure,) = report.failures
    assert failure.question_id == "q1"
    assert isinstance(failure.exception, BatchEntryFailed)
    assert failure.exception.code == "MalformedDetail"
    assert failure.exception.retryable is False
    assert len(requests) == 1  # the entry is at fault: no retry
    assert sorted(e["detail"]["question_id"] for e in _details(sqs, url)) == ["q0", "q2"]
    with pytest.raises(AnnounceFailed) as info:
        publish(questions(3), "t-1", announce, strict=True)
    assert [d.question_id for d in info.value.report.failures] == ["q1"]


async def test_async_path_uses_its_own_long_lived_client(aws: Aws) -> None:
    _, sqs, url = _bus_to_queue(aws)
    announce = EventBridgeAnnounce("approvals", **aws.options)
    one = await apublish(questions(1), "t-1", announce)
    many = await apublish(questions(12), "t-2", announce)
    await announce.aclose()
    assert one.ok, one.failures
    assert many.ok, many.failures
    received = {e["detail"]["event_id"]: e["detail"] for e in _details(sqs, url)}
    assert received == {e.event_id: e.to_dict() for e in one.envelopes + many.envelopes}


async def test_async_batches_use_an_injected_client(aws: Aws) -> None:
    _, sqs, url = _bus_to_queue(aws)
    async with aws.aclient("events") as client:
        calls = count_requests(client, "eventbridge", "PutEvents")
        report = await apublish(
            questions(11), "t-1", EventBridgeAnnounce("approvals", async_client=client)
        )
    assert report.ok, report.failures
    assert [len(c["Entries"]) for c in calls] == [10, 1]
    assert len(_details(sqs, url)) == 11


def test_a_missing_bus_is_reported_and_strict_raises(aws: Aws) -> None:
    announce = EventBridgeAnnounce("nowhere", **aws.options)
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
    announce = EventBridgeAnnounce(
        "approvals", endpoint_url=f"http://127.0.0.1:{free_port()}", region=REGION
    )
    if asynchronous:
        report = await apublish(questions(2), "t-1", announce)
        await announce.aclose()
    else:
        report = publish(questions(2), "t-1", announce)
    assert len(report.failures) == 2
    assert all("Could not connect" in (d.error or "") for d in report.failures)


@pytest.mark.parametrize("code", ["AccessDeniedException", "ThrottlingException"])
async def test_access_denied_and_throttling_are_reported(aws: Aws, code: str) -> None:
    _, sqs, url = _bus_to_queue(aws)
    events = aws.client("events", max_attempts=1)
    inject_error(events, "eventbridge", "PutEvents", code=code)
    report = publish(questions(2), "t-1", EventBridgeAnnounce("approvals", client=events))
    assert len(report.failures) == 2
    error = report.failures[0].exception
    assert isinstance(error, DeliveryFailed)
    assert isinstance(error.__cause__, ClientError)
    assert error.code == code
    assert error.retryable is code.startswith(("Throttling", "Provisioned"))
    async with aws.aclient("events", max_attempts=1) as client:
        inject_error(client, "eventbridge", "PutEvents", code=code)
        with pytest.raises(AnnounceFailed):
            await apublish(
                questions(1),
                "t-1",
                EventBridgeAnnounce("approvals", async_client=client),
                strict=True,
            )
    assert _details(sqs, url) == []


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"bus_name": "my bus"},
            "announcer 'eventbridge': option 'bus_name': expected an event bus",
        ),
        ({"bus_name": ""}, "option 'bus_name': expected an event bus name"),
        (
            {"source": "aws.events"},
            "option 'source': expected 1-256 characters not starting with 'aws.'",
        ),
        ({"source": ""}, "option 'source': expected 1-256"),
        ({"profile": "nobody"}, "option 'profile': not in the AWS config files"),
    ],
)
def test_invalid_options_are_refused_by_name(
    aws: Aws, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        announcer("eventbridge", **{"bus_name": "approvals", **aws.options, **options})


def test_configured_by_name_from_toml(aws: Aws) -> None:
    _, sqs, url = _bus_to_queue(aws)
    config = tomllib.loads(
        f"""
        [[announce]]
        use = "eventbridge"
        bus_name = "approvals"
        endpoint_url = "{aws.url}"
        region = "{REGION}"
        """
    )
    (announce,) = announcers_from_config(config["announce"])
    assert isinstance(announce, EventBridgeAnnounce)
    report = publish(questions(1), "t-1", announce)
    assert report.ok, report.failures
    assert report.deliveries[0].announcer == "eventbridge"
    assert len(_details(sqs, url)) == 1


def test_config_check_connect_describes_the_bus_and_fails_on_a_wrong_port(
    aws: Aws, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    aws.client("events").create_event_bus(Name="approvals")
    right = {"use": "eventbridge", "bus_name": "approvals", **aws.options}
    wrong_port = {**right, "endpoint_url": f"http://127.0.0.1:{free_port()}"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, wrong_port)
    assert "EndpointConnectionError" in lines[4]
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, {**right, "bus_name": "nope"})
    assert "ResourceNotFoundException" in lines[4]


def test_an_entry_refused_with_a_throttling_code_is_retried_once(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws)
    requests = count_requests(events, "eventbridge", "PutEvents")
    refuse_entries(
        events, "eventbridge", "PutEvents", question_ids=["q1"], code="ThrottlingException"
    )
    report = publish(questions(3), "t-1", EventBridgeAnnounce("approvals", client=events))
    assert report.ok, report.failures
    assert [len(call["Entries"]) for call in requests] == [3, 1]
    assert json.loads(requests[1]["Entries"][0]["Detail"])["question_id"] == "q1"
    assert [d.attempts for d in report.deliveries] == [1, 2, 1]
    assert sorted(e["detail"]["question_id"] for e in _details(sqs, url)) == ["q0", "q1", "q2"]


def test_an_entry_throttled_twice_is_reported_retryable(aws: Aws) -> None:
    events, sqs, url = _bus_to_queue(aws)
    requests = count_requests(events, "eventbridge", "PutEvents")
    refuse_entries(
        events,
        "eventbridge",
        "PutEvents",
        question_ids=["q0"],
        code="ThrottlingException",
        times=None,
    )
    report = publish(questions(2), "t-1", EventBridgeAnnounce("approvals", client=events))
    (failure,) = report.failures
    assert failure.question_id == "q0"
    assert isinstance(failure.exception, BatchEntryFailed)
    assert (failure.exception.code, failure.exception.retryable) == ("ThrottlingException", True)
    assert failure.attempts == 2
    assert len(requests) == 2
    assert [e["detail"]["question_id"] for e in _details(sqs, url)] == ["q1"]


async def test_the_async_path_retries_a_refused_entry_the_same_way(aws: Aws) -> None:
    _, sqs, url = _bus_to_queue(aws)
    async with aws.aclient("events") as client:
        refused = refuse_entries(
            client, "eventbridge", "PutEvents", question_ids=["q0"], code="InternalFailure"
        )
        report = await apublish(
            questions(2), "t-1", EventBridgeAnnounce("approvals", async_client=client)
        )
    assert report.ok, report.failures
    assert refused == [["q0"]]
    assert [d.attempts for d in report.deliveries] == [2, 1]
    assert len(_details(sqs, url)) == 2


def test_its_clients_retry_in_standard_mode_and_name_agent_wait(aws: Aws) -> None:
    # Built by agent-wait-aws like every AWS announcer's; the requests are checked on SQS.
    announce = EventBridgeAnnounce("approvals", **aws.options)
    config = announce.clients.sync().meta.config
    assert config.retries == {"mode": "standard"}
    assert config.user_agent_extra == f"agent-wait/{version('agent-wait-core')}"
