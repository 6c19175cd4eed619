"""SqsEntry on a real moto server: the entry-point conformance kit, options and registration."""

from __future__ import annotations

import json
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest

from agent_wait.core import ConfigError, EntryPoint, entry
from agent_wait.core.transport import MAX_MESSAGE_BYTES, fit_identifier
from agent_wait.host import serve_entry
from agent_wait.sqs import SqsEntry
from agent_wait.testing import EntryContract
from tests.aws_moto import Aws, create_queue
from tests.proxy import Proxy

pytestmark = pytest.mark.integration


def fifo_with_dead_letters(aws: Aws, name: str, max_receives: int) -> str:
    sqs = aws.client("sqs")
    _, dlq_arn = create_queue(sqs, f"{name}-dlq.fifo")
    redrive = json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": str(max_receives)})
    url, _ = create_queue(sqs, f"{name}.fifo", RedrivePolicy=redrive)
    return url


class TestSqsEntry(EntryContract):
    @pytest.fixture(autouse=True)
    def _aws(self, aws: Aws) -> Iterator[None]:
        self.aws = aws
        # moto behind a TCP proxy, cut once the entry point is built (it reads its queue's
        # redrive policy when built): SQS unreachable, as in an outage.
        self.proxy = Proxy(urlsplit(aws.url).port or 80)
        yield
        self.proxy.close()

    def make_unreachable_entry(self) -> EntryPoint:
        url = fifo_with_dead_letters(self.aws, "unreachable", 3)
        built = SqsEntry(
            url,
            endpoint_url=f"http://127.0.0.1:{self.proxy.port}",
            region=self.aws.options["region"],
            config={"retries": {"mode": "standard", "total_max_attempts": 1}},
        )
        self.proxy.cut()
        return built

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        url = fifo_with_dead_letters(self.aws, "inbound", max_attempts)
        return SqsEntry(
            url,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
            **self.aws.options,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        assert isinstance(entry, SqsEntry)
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            pytest.skip("an SQS message body is text")
        if "\x00" in text:
            pytest.skip("SQS refuses a body holding control characters such as NUL")
        if len(body) > MAX_MESSAGE_BYTES:
            pytest.skip("SQS refuses a body over its size limit")
        self.aws.client("sqs").send_message(
            QueueUrl=entry.queue_url,
            MessageBody=text,
            MessageGroupId=fit_identifier(thread_id),
            MessageDeduplicationId=str(uuid.uuid4()),
        )


def test_registered_by_name_with_the_redrive_policy_as_max_attempts(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "named", 4)
    with entry("sqs", queue_url=url, **aws.options) as built:
        assert isinstance(built, SqsEntry)
        assert built.max_attempts == 4
        assert built.dead_letter_queue_url.endswith("/named-dlq.fifo")


def test_send_groups_by_thread_and_deduplicates_on_the_content(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "sent", 3)
    sqs = aws.client("sqs")
    answer = {"thread_id": "order 4471/ä", "question_id": "q1", "answer": {"action": "approve"}}
    with SqsEntry(url, **aws.options) as messages:
        messages.send(answer)
        messages.send(dict(answer))  # the same message again: deduplicated
        [raw] = sqs.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, MessageSystemAttributeNames=["All"]
        )["Messages"]
    assert json.loads(raw["Body"]) == answer
    group = raw["Attributes"]["MessageGroupId"]
    # The thread id has characters SQS refuses in a group id: its SHA-256 digest stands in.
    assert len(group) == 64
    assert group != answer["thread_id"]
    assert len(raw["Attributes"]["MessageDeduplicationId"]) == 64


@pytest.mark.parametrize(
    ("queue", "redrive", "options", "expected"),
    [
        (
            "standard",
            True,
            {},
            r"entry point 'sqs': option 'queue_url': expected an SQS FIFO queue URL"
            r".*\(got 'http://.*/standard'\)",
        ),
        ("bare.fifo", False, {}, "has no redrive policy"),
        (
            "ok.fifo",
            True,
            {"max_attempts": 9},
            r"option 'max_attempts': .* after 3 receives.*\(got 9\)",
        ),
        (
            "ok.fifo",
            True,
            {"visibility_timeout": 0.5},
            r"option 'visibility_timeout': .*greater than or equal to 1 \(got 0.5\)",
        ),
        (
            "ok.fifo",
            True,
            {"visibility_timeout": True},
            r"option 'visibility_timeout': expected a number, not true/false \(got True\)",
        ),
        (
            "ok.fifo",
            True,
            {"visibility_timeout": 43201},
            r"option 'visibility_timeout': .*less than or equal to 43200 \(got 43201\)",
        ),
        ("ok.fifo", True, {"retry_delay": -1}, r"option 'retry_delay': .*\(got -1\)"),
        (
            "ok.fifo",
            True,
            {"visibilty_timeout": 5},
            r"entry point 'sqs': unknown option 'visibilty_timeout'; "
            r"did you mean 'visibility_timeout'\?",
        ),
    ],
)
def test_bad_options_are_refused_naming_them(
    aws: Aws, queue: str, redrive: bool, options: dict[str, int], expected: str
) -> None:
    sqs = aws.client("sqs")
    if redrive:
        url = fifo_with_dead_letters(aws, queue.removesuffix(".fifo"), 3)
        url = url if queue.endswith(".fifo") else url.removesuffix(".fifo")
    else:
        url, _ = create_queue(sqs, queue)
    with pytest.raises(ConfigError, match=expected):
        entry("sqs", queue_url=url, **options, **aws.options)


def test_a_bad_connection_option_names_the_entry_point(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "connection", 3)
    with pytest.raises(
        ConfigError, match=r"entry point 'sqs': option 'endpoint_url': .*\(got 'ftp://x'\)"
    ):
        SqsEntry(url, endpoint_url="ftp://x", region="us-east-1")


def test_serve_keeps_a_long_runs_lease_and_handles_it_once(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "serve", 3)
    calls: list[str] = []
    stop = threading.Event()

    def handle(message: dict[str, Any]) -> str:
        calls.append(message["thread_id"])
        time.sleep(5)  # more than twice the visibility timeout: only extend keeps it
        stop.set()
        return "done"

    with SqsEntry(url, visibility_timeout=2, **aws.options) as messages:
        messages.send({"thread_id": "order-4471", "input": {"amount": 41000}})
        report = serve_entry(handle, messages, concurrency=2, wait=0.5, stop=stop)
        assert messages.receive(1, wait=0) == []
        assert messages.dead_letters() == []
    assert calls == ["order-4471"]
    assert (report.acknowledged, report.lost_leases, report.retried) == (1, 0, 0)


def test_reply_to_is_the_queue_url_and_endpoint(aws: Aws) -> None:
    url = fifo_with_dead_letters(aws, "described", 3)
    with SqsEntry(url, **aws.options) as messages:
        described = messages.reply_to()
    assert described["use"] == "sqs"
    assert described["queue_url"] == url
    assert described.get("endpoint_url") == aws.options.get("endpoint_url")
    assert not {"client", "profile", "config"} & described.keys()
