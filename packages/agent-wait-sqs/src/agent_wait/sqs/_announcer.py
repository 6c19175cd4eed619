"""SqsAnnounce: one SQS message per question; SendMessageBatch when a publish has several."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agent_wait.aws import (
    AWS_MESSAGE_ATTRIBUTES,
    AwsBatchAnnounce,
    Call,
    Message,
    aws_client_pair,
    boto3_sdk,
    message_attributes,
    sendable_json,
    string_attributes,
)
from agent_wait.core import LifecycleEvent, Receipt, WaitEnvelope
from agent_wait.core.transport import fit_identifier, utf8_size
from agent_wait.sqs._options import SqsOptions

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 1_048_576
"""Bytes (UTF-8) of body plus attributes, per message and per SendMessageBatch request (AWS)."""
BATCH_LIMIT = 10
"""Entries per SendMessageBatch request (AWS)."""


class SqsAnnounce(AwsBatchAnnounce):
    """Sends each envelope as one SQS message; several in SendMessageBatch requests.

    The body is the envelope JSON. Message attributes (``String``) carry ``type``,
    ``thread_id``, the fixed ``attributes`` and the policy's tags (sorted by name), at most 10:
    tags that do not fit, have an empty value or an invalid name are left out with a warning.
    On a FIFO queue (``.fifo``) ``MessageGroupId`` is the thread id (or ``message_group_id``)
    and ``MessageDeduplicationId`` the envelope's ``dedupe_key``; either is replaced by its
    SHA-256 hex digest when it has characters or a length SQS refuses.

    SQS takes only XML 1.0's characters in a body or an attribute value. The body's JSON
    escapes any other (U+FFFE, U+FFFF): a consumer decodes the same value. An attribute value
    has its control characters and noncharacters replaced by U+FFFD, logged at WARNING and
    listed in the delivery's ``notes``.

    Opted in to lifecycle events (``with_lifecycle_events``), it sends each as one message: the
    event's JSON, attributes ``type``, ``thread_id`` and the fixed ``attributes``, and on FIFO
    the event's own ``dedupe_key`` (never its question's, which the queue would drop as a
    repeat) in the thread's group.

    Sizes are checked in UTF-8 bytes before sending: a message over 1 MiB (body and attributes)
    fails alone. Batches hold at most 10 entries and 1 MiB. An entry SQS refuses through no
    fault of its own (``SenderFault`` false) is retried once in a new batch, then reported; one
    at fault is reported at once; nothing fails the other entries.

    Args:
        queue_url: The queue's URL.
        message_group_id: FIFO only: one group for every message instead of the thread id.
        attributes: Fixed message attributes added to every message (name to string value).
        client: A boto3 SQS client to use (and not close) instead of building one.
        async_client: An aiobotocore SQS client to use (and not close) on the async path.
        endpoint_url: Endpoint of the built clients (LocalStack, moto, a VPC endpoint).
        region: Region of the built clients; default: the queue URL's, else the AWS config's.
        profile: AWS config profile of the built clients.
        config: A ``botocore.config.Config`` (or a table of its options) merged over the built
            clients' own: standard retries and an ``agent-wait/<version>`` User-Agent suffix.

    Raises:
        ConfigError: An option is invalid; the message names it and the value.
    """

    name = "sqs"
    service = "SQS"
    batch_limit = BATCH_LIMIT
    request_limit = MESSAGE_LIMIT
    options_model = SqsOptions

    def __init__(
        self,
        queue_url: str,
        *,
        message_group_id: str | None = None,
        attributes: Mapping[str, str] | None = None,
        client: Any = None,
        async_client: Any = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        config: Any = None,
    ) -> None:
        options = SqsOptions.parse(
            self.name,
            {
                "queue_url": queue_url,
                "message_group_id": message_group_id,
                "attributes": attributes,
                "client": client,
                "async_client": async_client,
                "endpoint_url": endpoint_url,
                "region": region,
                "profile": profile,
                "config": config,
            },
        )
        self.queue_url = options.queue_url
        self.fifo = options.fifo
        self.message_group_id = options.message_group_id
        self.attributes = options.attributes or {}
        options = options.model_copy(update={"region": options.region_or_default()})
        self.clients = aws_client_pair("sqs", boto3_sdk("agent-wait-sqs"), options, name=self.name)

    @property
    def destination(self) -> str:
        """The queue's name (the last part of its URL)."""
        return self.queue_url.rstrip("/").rsplit("/", 1)[-1]

    def check_connection(self) -> bool:
        """Read the queue's ARN (``GetQueueAttributes``; ``agent-wait config check --connect``)."""
        self.clients.sync().get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn"]
        )
        return True

    def message(self, envelope: WaitEnvelope) -> Message:
        """The SendMessage parameters of one envelope, its size (body and attributes), notes."""
        body = sendable_json(envelope.to_json().decode("utf-8"))
        notes: list[str] = []
        attributes, attributes_size = message_attributes(
            envelope, self.attributes, what="SQS message sent", logger=logger, notes=notes
        )
        size = utf8_size(body) + attributes_size
        if size > MESSAGE_LIMIT:
            raise ValueError(
                f"the SQS message of question {envelope.question_id!r} is {size} bytes (body and "
                f"attributes), over SQS's {MESSAGE_LIMIT}-byte limit"
            )
        params: dict[str, Any] = {"MessageBody": body, "MessageAttributes": attributes}
        if self.fifo:
            params["MessageGroupId"] = self.message_group_id or fit_identifier(envelope.thread_id)
            params["MessageDeduplicationId"] = fit_identifier(envelope.dedupe_key)
        return params, size, notes

    def deliver_event(self, event: LifecycleEvent) -> Receipt:
        """SendMessage of one lifecycle event; the receipt carries its ``MessageId``.

        Its attributes are ``type``, ``thread_id``, the fixed attributes, then the plugins'
        headers (a trace context) within SQS's limit of 10; characters SQS refuses are escaped
        in the body and replaced in the attributes, as in a question's message.
        """
        fields = AWS_MESSAGE_ATTRIBUTES.with_headers(
            {"type": event.type, "thread_id": event.thread_id, **self.attributes}, event
        )
        attributes, notes = string_attributes(fields)
        if notes:
            logger.warning(
                "SQS lifecycle event of question %s: %s", event.question_id, "; ".join(notes)
            )
        params: dict[str, Any] = {
            "QueueUrl": self.queue_url,
            "MessageBody": sendable_json(event.to_json().decode("utf-8")),
            "MessageAttributes": attributes,
        }
        if self.fifo:
            params["MessageGroupId"] = self.message_group_id or fit_identifier(event.thread_id)
            params["MessageDeduplicationId"] = fit_identifier(event.dedupe_key)
        response = self.clients.sync().send_message(**params)
        return Receipt(message_id=response.get("MessageId"), notes=notes)

    def single_request(self, params: dict[str, Any]) -> Call:
        """SendMessage."""
        return "send_message", {"QueueUrl": self.queue_url, **params}

    def batch_request(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> Call:
        """SendMessageBatch."""
        return "send_message_batch", {
            "QueueUrl": self.queue_url,
            "Entries": [{"Id": entry_id, **params} for entry_id, params in entries],
        }
