"""agent-wait-aws: what the AWS announcers share, on its own (no announcer distribution)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import agent_wait.aws
from agent_wait.aws import (
    AWS_MESSAGE_ATTRIBUTES,
    RETRYABLE_CODES,
    AwsBatchAnnounce,
    boto3_sdk,
    refused_entry,
    sendable_json,
    string_attributes,
)
from agent_wait.core import (
    BatchEntryFailed,
    ConfigError,
    DeliveryFailed,
    Question,
    WaitEnvelope,
    WaitPolicy,
    build_envelope,
    publish,
)
from agent_wait.core.transport import AttributeRules
from tests.aws_moto import Aws, count_requests, create_queue, drain, questions, refuse_entries

README = Path(__file__).resolve().parents[2] / "packages" / "agent-wait-aws" / "README.md"


def test_public_names() -> None:
    assert sorted(agent_wait.aws.__all__) == [
        "AWS_MESSAGE_ATTRIBUTES",
        "AwsBatchAnnounce",
        "AwsMessage",
        "AwsOptions",
        "AwsSdk",
        "Call",
        "EntryResult",
        "Message",
        "REFUSED_ENTRY_ATTEMPTS",
        "RETRYABLE_CODES",
        "RETRY_MODE",
        "aws_client_pair",
        "aws_receipt",
        "boto3_sdk",
        "client_config",
        "message_attributes",
        "refused_entry",
        "sendable_json",
        "string_attributes",
        "user_agent_extra",
    ]


def test_importing_it_imports_no_sdk() -> None:
    # Announcer options (and `agent-wait plugins`) import agent_wait.aws: boto3 loads only when
    # an announcer is built.
    code = "import sys, agent_wait.aws; print(sorted(m for m in sys.modules if m.split('.')[0] in ('boto3', 'botocore', 'aiobotocore')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize(
    ("code", "sender_fault", "retryable"),
    [
        ("InternalError", False, True),  # the service says: not the entry's fault
        ("InvalidParameterValue", True, False),
        ("ThrottlingException", True, False),  # the service's word wins over the code
        ("ThrottlingException", None, True),  # no word (EventBridge): the code decides
        ("InternalFailure", None, True),
        ("MalformedDetail", None, False),
    ],
)
def test_a_refused_entry_is_retryable_when_not_at_fault(
    code: str, sender_fault: bool | None, retryable: bool
) -> None:
    refused = refused_entry("SQS", code, "why", sender_fault)
    assert isinstance(refused, BatchEntryFailed)
    assert isinstance(refused, DeliveryFailed)
    assert refused.retryable is retryable
    assert (refused.code, refused.sender_fault, refused.service) == (code, sender_fault, "SQS")
    assert str(refused) == f"SQS refused the entry: {code}: why"


def test_throttling_and_server_fault_codes_are_retryable() -> None:
    assert {"ThrottlingException", "InternalError", "ServiceUnavailable"} <= RETRYABLE_CODES
    assert "AccessDenied" not in RETRYABLE_CODES


def test_boto3_sdk_is_built_once_per_distribution() -> None:
    from botocore.exceptions import ClientError

    sdk = boto3_sdk("agent-wait-sqs")
    assert sdk is boto3_sdk("agent-wait-sqs")
    assert sdk.distribution == "agent-wait-sqs"
    assert sdk.client_error is ClientError
    throttled = ClientError(
        {"Error": {"Code": "Throttling"}, "ResponseMetadata": {"RetryAttempts": 2}}, "Send"
    )
    failed = sdk.classify("sqs", throttled)
    assert isinstance(failed, DeliveryFailed)
    assert (failed.retryable, failed.code, failed.attempts) == (True, "Throttling", 3)
    assert failed.__cause__ is throttled


def _readme_announcer() -> type[AwsBatchAnnounce]:
    (code,) = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    namespace: dict[str, Any] = {}
    exec(compile(code, str(README), "exec"), namespace)
    return namespace["QueueAnnounce"]


def test_the_readme_announcer_delivers_in_batches_and_retries_a_refused_entry(aws: Aws) -> None:
    queue_announce = _readme_announcer()
    sqs = aws.client("sqs")
    url, _ = create_queue(sqs, "approvals")
    requests = count_requests(sqs, "sqs", "SendMessageBatch")
    refuse_entries(sqs, "sqs", "SendMessageBatch", question_ids=["q4"], code="InternalError")
    with queue_announce(url, client=sqs) as announce:
        report = publish(questions(12), "t-1", announce)
    assert report.ok, report.failures
    assert [len(r["Entries"]) for r in requests] == [10, 1, 2]  # q4 again, then the rest
    assert sorted(json.loads(m["Body"])["question_id"] for m in drain(sqs, url)) == sorted(
        f"q{i}" for i in range(12)
    )


def test_the_readme_announcer_refuses_a_bad_option_by_name(aws: Aws) -> None:
    with pytest.raises(ConfigError, match="endpoint_url"):
        _readme_announcer()("https://example.invalid/q", endpoint_url="localhost:1")


def _envelope(tags: dict[str, str]):
    policy = WaitPolicy(tags=tags)
    return build_envelope(Question(question_id="q1", question={}, policy=policy), "t-1")


def test_select_orders_type_thread_fixed_then_sorted_tags() -> None:
    rules = AWS_MESSAGE_ATTRIBUTES
    tags = {f"t{i:02d}": "v" for i in range(12)}
    chosen = rules.select(_envelope(tags), {"app": "billing"})
    assert list(chosen.values) == ["type", "thread_id", "app", *[f"t{i:02d}" for i in range(7)]]
    assert chosen.values["type"] == "wait.created"
    assert chosen.values["thread_id"] == "t-1"
    assert sorted(chosen.dropped) == [f"t{i:02d}" for i in range(7, 12)]
    assert all("10-attribute limit" in r for r in chosen.dropped.values())


def test_select_drops_empty_invalid_and_taken_names_individually() -> None:
    tags = {"ok": "1", "empty": "", "AWS.x": "1", "a..b": "1", "has space": "1", "type": "y"}
    chosen = AWS_MESSAGE_ATTRIBUTES.select(_envelope(tags))
    assert chosen.values == {"type": "wait.created", "thread_id": "t-1", "ok": "1"}
    assert chosen.dropped["empty"] == "empty value"
    assert "reserved" in chosen.dropped["AWS.x"]
    assert "'..'" in chosen.dropped["a..b"]
    assert "only letters" in chosen.dropped["has space"]
    assert "taken" in chosen.dropped["type"]


@pytest.mark.parametrize(
    ("attributes", "message"),
    [
        ({"Amazon.app": "x"}, "'Amazon.app' is not a valid"),
        ({".app": "x"}, "'.app' is not a valid"),
        ({"a" * 257: "x"}, "longer than 256"),
        ({"app": ""}, "'app' must be a non-empty string"),
        ({"app": 3}, "'app' must be a non-empty string, got 3"),
        ({"thread_id": "x"}, "'thread_id' is reserved"),
        ({f"a{i}": "x" for i in range(9)}, "9 attributes given"),
    ],
)
def test_fixed_attributes_are_checked_at_construction(
    attributes: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        AWS_MESSAGE_ATTRIBUTES.fixed("attributes", attributes)
    assert str(info.value).startswith("attributes: ")


def test_fixed_attributes_accept_valid_names() -> None:
    assert AWS_MESSAGE_ATTRIBUTES.fixed("attributes", {"b": "2", "a-b_c.d": "1"}) == {
        "a-b_c.d": "1",
        "b": "2",
    }
    assert AttributeRules(max_count=3).fixed("x", None) == {}


# XML 1.0's characters, what SNS and SQS take in a message and an attribute value.
_TAKEN = re.compile("^[\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]*$")
_REFUSED_SAMPLES = [
    *map(chr, [*range(0x20), 0xD800, 0xDBFF, 0xDC00, 0xDFFF, 0xFFFE, 0xFFFF]),
]
_TAKEN_SAMPLES = [
    "\t",
    "\n",
    "\r",
    " ",
    "\x7f",
    "\x85",
    "\ud7ff",
    "\ue000",
    "\ufffd",
    "é",
    "\U0001f600",
]


@pytest.mark.parametrize("character", _REFUSED_SAMPLES + _TAKEN_SAMPLES, ids=ascii)
def test_sendable_json_escapes_what_sns_and_sqs_refuse_and_decodes_to_the_same_value(
    character: str,
) -> None:
    value = {f"key {character}": [f"a{character}b", character, "ascii"]}
    for text in (json.dumps(value, ensure_ascii=False), json.dumps(value)):
        sendable = sendable_json(text)
        assert _TAKEN.match(sendable), ascii(sendable)
        assert json.loads(sendable) == value


def test_an_envelope_with_noncharacters_is_sent_as_json_pydantic_decodes_unchanged() -> None:
    question = Question(question_id="q1", question={"note": "\ufffe \uffff \x1b \x00 é"})
    envelope = build_envelope(question, "t-1")
    sendable = sendable_json(envelope.to_json().decode("utf-8"))
    assert _TAKEN.match(sendable)
    assert "\\ufffe" in sendable  # escaped, not dropped
    assert WaitEnvelope.model_validate_json(sendable) == envelope
    plain = sendable_json(
        build_envelope(Question(question_id="q2", question="é"), "t").to_json().decode()
    )
    assert "é" in plain  # what SQS takes stays as it is


def test_string_attributes_replace_what_sns_and_sqs_refuse_and_say_so() -> None:
    attributes, notes = string_attributes(
        {"thread_id": "t\x1b[0m\x00", "team": "ops", "x": "\uffff"}
    )
    assert attributes == {
        "thread_id": {"DataType": "String", "StringValue": "t\ufffd[0m\ufffd"},
        "team": {"DataType": "String", "StringValue": "ops"},
        "x": {"DataType": "String", "StringValue": "\ufffd"},
    }
    assert notes == (
        "message attribute 'thread_id': 2 character(s) SNS and SQS refuse replaced by U+FFFD",
        "message attribute 'x': 1 character(s) SNS and SQS refuse replaced by U+FFFD",
    )
