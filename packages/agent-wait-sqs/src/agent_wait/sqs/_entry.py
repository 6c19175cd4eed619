"""SqsEntry: an SQS FIFO queue as an entry point, its redrive policy's queue as the dead letters."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import time
import uuid
from collections.abc import Mapping
from contextlib import AbstractContextManager
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, cast

from agent_wait.aws import (
    AWS_MESSAGE_ATTRIBUTES,
    aws_client_pair,
    boto3_sdk,
    sendable_json,
    string_attributes,
)
from agent_wait.core import ConfigError, DeadLetter, EntryPoint, Received, log_safe, parse_message
from agent_wait.core.transport import (
    Poison,
    check_body_size,
    connection_errors,
    dead_letter,
    fit_identifier,
    read_message,
)
from agent_wait.sqs._options import SqsConnectionOptions, SqsEntryOptions

logger = logging.getLogger(__name__)

_LONG_POLL = 20  # seconds: SQS's longest ReceiveMessage wait
_BATCH = 10  # SQS's most messages per ReceiveMessage
_ERROR_BYTES = 4096  # of the last error kept on a dead letter
_ATTEMPTS = "agent-wait-attempts"
_ERROR = "agent-wait-error"
_DEAD_AT = "agent-wait-dead-at"


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class SqsEntry(EntryPoint):
    """Start messages and answers on an SQS FIFO queue, one message group per thread.

    ``send`` sets ``MessageGroupId`` to the thread id and ``MessageDeduplicationId`` to the
    SHA-256 of the message, so SQS hands a thread's messages out in order, none while an earlier
    one is received and not deleted, and drops an identical copy sent within its five-minute
    deduplication window. ``receive`` long polls for up to ten messages per request; a batch may
    hold several messages of one thread, in order, which the worker handles one after another.
    ``ack`` deletes; ``extend`` changes the visibility timeout; ``fail`` makes the message
    visible again after ``retry_delay``; ``release`` makes it visible at once. The attempt is
    SQS's ``ApproximateReceiveCount``, which counts every receive: a message released unhandled
    (it waited behind one of its thread that failed, or the worker stopped) used one.

    Dead letters live in the queue's redrive policy's dead-letter queue: after its
    ``maxReceiveCount`` (= ``max_attempts``) failed attempts a message is moved there by ``fail``
    with the last error, and a message never acknowledged that often (the host crashed) is
    moved there by SQS itself.

    When SQS cannot be reached (botocore's connection errors and timeouts, after the client's
    own retries), every call of the host side raises ``ConnectionError``, so that the worker
    tries it again with backoff; a message's lease is kept until its ``ack``, ``fail`` or
    ``release`` went through.

    Args:
        queue_url: The FIFO queue's URL (``.fifo``), with a redrive policy.
        visibility_timeout: Seconds a received message stays leased (whole seconds, 1 to 43200).
        max_attempts: Deliveries before a message is dead-lettered; default and only allowed
            value: the redrive policy's ``maxReceiveCount``.
        retry_delay: Seconds before a failed message is handed out again (whole seconds).
        client: A boto3 SQS client to use (and not close) instead of building one.
        endpoint_url: Endpoint of the built client (LocalStack, moto, a VPC endpoint).
        region: Region of the built client; default: the queue URL's, else the AWS config's.
        profile: AWS config profile of the built client.
        config: A ``botocore.config.Config`` (or a table of its options) for the built client.

    Raises:
        ConfigError: An option is invalid, the queue is not FIFO or has no redrive policy, or
            ``max_attempts`` differs from its ``maxReceiveCount``; the message names it.
    """

    name = "sqs"
    options_model = SqsEntryOptions
    receive_batch = _BATCH

    def __init__(
        self,
        queue_url: str,
        *,
        visibility_timeout: float = 300,
        max_attempts: int | None = None,
        retry_delay: float = 1,
        client: Any = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        config: Any = None,
    ) -> None:
        options = SqsEntryOptions.parse(
            self.name,
            {
                "queue_url": queue_url,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "client": client,
                "endpoint_url": endpoint_url,
                "region": region,
                "profile": profile,
                "config": config,
            },
        )
        self.queue_url = options.queue_url
        self._endpoint_url = options.endpoint_url
        self.visibility_timeout = float(math.ceil(options.visibility_timeout))
        self.retry_delay = options.retry_delay
        # The connection options are the sqs announcer's: one model checks them for both.
        connection = SqsConnectionOptions.parse(
            self.name,
            {
                "queue_url": options.queue_url,
                "client": options.client,
                "endpoint_url": options.endpoint_url,
                "region": options.region,
                "profile": options.profile,
                "config": options.config,
            },
        )
        connection = connection.model_copy(update={"region": connection.region_or_default()})
        sdk = boto3_sdk("agent-wait-sqs")
        self._clients = aws_client_pair("sqs", sdk, connection, name=self.name)
        self._connection_errors = sdk.connection_errors
        with self._reachable():
            self.dead_letter_queue_url, receives = self._redrive_target()
        if options.max_attempts is not None and options.max_attempts != receives:
            raise SqsEntryOptions.option_error(
                self.name,
                "max_attempts",
                f"the queue's redrive policy moves a message after {receives} receives "
                "(maxReceiveCount); max_attempts must match it",
                options.max_attempts,
            )
        self.max_attempts = receives
        self._leases: dict[str, float] = {}  # receipt -> monotonic end of the lease
        self._lock = threading.Lock()

    @property
    def _sqs(self) -> Any:
        return self._clients.sync()

    def _reachable(self) -> AbstractContextManager[None]:
        return connection_errors(self._connection_errors, f"SQS at {self.queue_url}")

    def _redrive_target(self) -> tuple[str, int]:
        attributes = self._sqs.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["RedrivePolicy"]
        ).get("Attributes", {})
        if "RedrivePolicy" not in attributes:
            raise ConfigError(
                f"queue_url: {self.queue_url!r} has no redrive policy; give it a dead-letter "
                "queue (deadLetterTargetArn, maxReceiveCount) so failing messages are kept"
            )
        policy = json.loads(attributes["RedrivePolicy"])
        _, _, _, _, account, name = str(policy["deadLetterTargetArn"]).split(":", 5)
        url = self._sqs.get_queue_url(QueueName=name, QueueOwnerAWSAccountId=account)["QueueUrl"]
        return str(url), int(policy["maxReceiveCount"])

    def send(self, message: Mapping[str, Any]) -> None:
        """Send a start message or an answer: group = thread, deduplicated on its content.

        The plugins' headers (a trace context) go in its message attributes.
        """
        parsed = parse_message(message)  # a malformed message is refused before it is sent
        checked = dict(message)
        body = check_body_size(json.dumps(checked, ensure_ascii=False, sort_keys=True))
        headers = AWS_MESSAGE_ATTRIBUTES.with_headers({}, parsed)
        with self._reachable():
            self._send(self.queue_url, body, checked["thread_id"], _digest(body), **headers)

    def _send(self, url: str, body: str, thread_id: str, dedupe: str, **attributes: str) -> None:
        # SQS refuses characters outside XML 1.0's: escaped in the JSON body (the same value),
        # replaced in an attribute (an error text quoting a control character).
        self._sqs.send_message(
            QueueUrl=url,
            MessageBody=sendable_json(body),
            MessageGroupId=fit_identifier(thread_id),
            MessageDeduplicationId=dedupe,
            MessageAttributes=string_attributes(attributes)[0],
        )

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Long poll for up to ``max_messages``, ten per request; a thread's in send order."""
        received: list[Received] = []
        seconds = min(_LONG_POLL, math.ceil(wait))
        while len(received) < max_messages:
            asked = min(_BATCH, max_messages - len(received))
            began = time.monotonic()
            try:
                with self._reachable():
                    messages = cast(
                        "list[dict[str, Any]]",
                        self._sqs.receive_message(
                            QueueUrl=self.queue_url,
                            MaxNumberOfMessages=asked,
                            WaitTimeSeconds=0 if received else seconds,
                            VisibilityTimeout=int(self.visibility_timeout),
                            MessageSystemAttributeNames=[
                                "ApproximateReceiveCount",
                                "MessageGroupId",
                            ],
                        ).get("Messages", []),
                    )
            except ConnectionError:
                if not received:
                    raise
                break  # those already leased are handled, not left to their lease running out
            for raw in messages:
                message = read_message(raw["Body"])
                receipt = str(raw["ReceiptHandle"])
                attempt = int(raw["Attributes"]["ApproximateReceiveCount"])
                if isinstance(message, Poison):
                    # Its group (its thread) goes on at once: the next receive may bring the
                    # group's next message.
                    group = str(raw["Attributes"].get("MessageGroupId", ""))
                    with self._reachable():
                        self._bury(
                            str(raw["MessageId"]),
                            receipt,
                            raw["Body"],
                            group,
                            attempt,
                            message.error,
                        )
                    continue
                with self._lock:
                    self._leases[receipt] = began + self.visibility_timeout
                received.append(
                    Received(
                        id=str(raw["MessageId"]),
                        thread_id=str(message.get("thread_id", "")),
                        message=message,
                        attempt=attempt,
                        receipt=receipt,
                    )
                )
            if len(messages) < asked:
                break  # fewer than asked: another request now would most likely be empty
        return received

    def _held(self, received: Received) -> bool:
        # SQS accepts an old receipt handle after the message went to another receiver; the
        # lease's end, measured from before the receive, says whether it is still ours.
        with self._lock:
            end = self._leases.get(received.receipt)
        if end is not None and time.monotonic() < end:
            return True
        self._settled(received)
        return False

    def _settled(self, received: Received) -> None:
        # Only once the call went through: after a connection error the worker settles again.
        with self._lock:
            self._leases.pop(received.receipt, None)

    def ack(self, received: Received) -> bool:
        """Delete the message; False (nothing deleted) if its lease had run out."""
        if not self._held(received):
            return False
        with self._reachable():
            self._sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=received.receipt)
        self._settled(received)
        return True

    def extend(self, received: Received) -> bool:
        """Another ``visibility_timeout`` of lease; False if it had run out."""
        if not self._held(received):
            return False
        began = time.monotonic()
        with self._reachable():
            self._sqs.change_message_visibility(
                QueueUrl=self.queue_url,
                ReceiptHandle=received.receipt,
                VisibilityTimeout=int(self.visibility_timeout),
            )
        with self._lock:
            self._leases[received.receipt] = began + self.visibility_timeout
        return True

    def release(self, received: Received) -> bool:
        """Visible again at once (the next receive counts another attempt); False if its lease ran out."""
        if not self._held(received):
            return False
        with self._reachable():
            self._sqs.change_message_visibility(
                QueueUrl=self.queue_url, ReceiptHandle=received.receipt, VisibilityTimeout=0
            )
        self._settled(received)
        return True

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Visible again after ``retry_delay``; on the last attempt, to the dead-letter queue."""
        if not self._held(received):
            return False  # someone else holds it now; the redelivery counts the attempt
        with self._reachable():
            if retry and received.attempt < self.max_attempts:
                self._sqs.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=received.receipt,
                    VisibilityTimeout=math.ceil(self.retry_delay),
                )
                self._settled(received)
                return False
            body = json.dumps(received.message, ensure_ascii=False, sort_keys=True)
            self._bury(
                received.id, received.receipt, body, received.thread_id, received.attempt, error
            )
        self._settled(received)
        return True

    def _bury(
        self, message_id: str, receipt: str, body: str, thread_id: str, attempt: int, error: str
    ) -> None:
        """Send the message to the dead-letter queue with its error, then delete it here."""
        self._send(
            self.dead_letter_queue_url,
            body,
            thread_id,
            fit_identifier(message_id),
            **{
                _ATTEMPTS: str(attempt),
                _ERROR: error.encode("utf-8")[:_ERROR_BYTES].decode("utf-8", "ignore"),
                _DEAD_AT: _rfc3339(datetime.now(UTC)),
            },
        )
        self._sqs.delete_message(QueueUrl=self.queue_url, ReceiptHandle=receipt)
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in %s",
            log_safe(message_id),
            log_safe(thread_id),
            attempt,
            error.split(":", 1)[0],
            self.dead_letter_queue_url,
        )

    def _peek_dead(self, take: str | None = None) -> list[dict[str, Any]]:
        """Every message of the dead-letter queue; all but ``take`` are made visible again.

        ``take`` (a message id) is left hidden and returned first, for the caller to delete.
        """
        seen: list[dict[str, Any]] = []
        while True:
            batch = self._sqs.receive_message(
                QueueUrl=self.dead_letter_queue_url,
                MaxNumberOfMessages=10,
                WaitTimeSeconds=0,
                VisibilityTimeout=30,
                MessageAttributeNames=["All"],
                MessageSystemAttributeNames=["SentTimestamp", "MessageGroupId"],
            ).get("Messages", [])
            if not batch:
                break
            seen.extend(cast("list[dict[str, Any]]", batch))
        for raw in seen:
            if raw["MessageId"] != take:
                self._sqs.change_message_visibility(
                    QueueUrl=self.dead_letter_queue_url,
                    ReceiptHandle=raw["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
        return sorted(seen, key=lambda raw: raw["MessageId"] != take)

    def dead_letters(self) -> list[DeadLetter]:
        """The dead-letter queue's messages: the last error, or "never acknowledged"."""
        letters: list[DeadLetter] = []
        for raw in self._peek_dead():
            attributes = {
                name: str(value.get("StringValue", ""))
                for name, value in cast(
                    "dict[str, dict[str, Any]]", raw.get("MessageAttributes", {})
                ).items()
            }
            sent = datetime.fromtimestamp(int(raw["Attributes"]["SentTimestamp"]) / 1000, UTC)
            letter = dead_letter(
                str(raw["MessageId"]),
                str(raw["Attributes"].get("MessageGroupId", "")),
                raw["Body"],
                int(attributes.get(_ATTEMPTS, self.max_attempts)),
                attributes.get(
                    _ERROR,
                    f"never acknowledged in {self.max_attempts} deliveries (moved by the "
                    "queue's redrive policy)",
                ),
                attributes.get(_DEAD_AT, _rfc3339(sent)),
            )
            # The group is the thread id only when SQS accepted it as one; the body says it.
            thread = letter.message.get("thread_id")
            letters.append(
                letter if not isinstance(thread, str) else replace(letter, thread_id=thread)
            )
        return letters

    def redrive(self, message_id: str) -> bool:
        """Send a dead letter to the queue again as new, then delete it from the dead letters.

        It goes back to its message group, as it was: a poison message is dead-lettered again
        at its next receive, unless this host can read it now.
        """
        found = self._peek_dead(take=message_id)
        if not found or found[0]["MessageId"] != message_id:
            return False
        raw = found[0]
        group = str(raw["Attributes"]["MessageGroupId"])
        # A fresh deduplication id: the original may be inside SQS's five-minute window.
        self._send(self.queue_url, raw["Body"], group, uuid.uuid4().hex)
        self._sqs.delete_message(
            QueueUrl=self.dead_letter_queue_url, ReceiptHandle=raw["ReceiptHandle"]
        )
        return True

    def describe(self) -> dict[str, Any]:
        """``queue_url`` (and ``endpoint_url`` when set): IAM, not the message, grants access."""
        described: dict[str, Any] = {"queue_url": self.queue_url}
        if self._endpoint_url is not None:
            described["endpoint_url"] = self._endpoint_url
        return described

    def close(self) -> None:
        """Close the built client."""
        self._clients.close()

    def __repr__(self) -> str:
        return f"<SqsEntry 'sqs' queue_url={self.queue_url!r}>"


def _digest(body: str) -> str:
    return hashlib.sha256(body.encode("utf-8")).hexdigest()
