"""SqsAnnounce: one SQS message per question; SendMessageBatch when a publish has several."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.core import BatchEntryFailed, DeliveryOutcome, Receipt, WaitEnvelope
from agent_wait.core.transport import (
    AWS_MESSAGE_ATTRIBUTES,
    AwsSdk,
    ClientAnnounce,
    Exchange,
    aws_client_pair,
    aws_receipt,
    chunk,
    fit_identifier,
    utf8_size,
)
from agent_wait.sqs._options import SqsOptions

try:
    import boto3
    from botocore.config import Config
    from botocore.exceptions import (
        BotoCoreError,
        ClientError,
        HTTPClientError,
        ProfileNotFound,
    )
    from botocore.exceptions import ConnectionError as BotoConnectionError
except ImportError as error:  # pragma: no cover - the distribution depends on boto3
    raise ImportError("SqsAnnounce needs boto3: pip install agent-wait-sqs") from error


def _aio_session() -> type[Any]:
    # Imported on the async path's first use: aiobotocore is the [async] extra.
    from aiobotocore.session import AioSession

    return AioSession


_SDK = AwsSdk(
    boto3.Session,
    _aio_session,
    ProfileNotFound,
    Config,
    "agent-wait-sqs",
    client_error=ClientError,
    sdk_error=BotoCoreError,
    connection_errors=(BotoConnectionError, HTTPClientError),
)
logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 1_048_576
"""Bytes (UTF-8) of body plus attributes, per message and per SendMessageBatch request (AWS)."""
BATCH_LIMIT = 10
"""Entries per SendMessageBatch request (AWS)."""


@dataclass(frozen=True, slots=True)
class _Message:
    index: int
    params: dict[str, Any]
    size: int


class SqsAnnounce(ClientAnnounce):
    """Sends each envelope as one SQS message; several in SendMessageBatch requests.

    The body is the envelope JSON. Message attributes (``String``) carry ``type``,
    ``thread_id``, the fixed ``attributes`` and the policy's tags (sorted by name), at most 10:
    tags that do not fit, have an empty value or an invalid name are left out with a warning.
    On a FIFO queue (``.fifo``) ``MessageGroupId`` is the thread id (or ``message_group_id``)
    and ``MessageDeduplicationId`` the envelope's ``dedupe_key``; either is replaced by its
    SHA-256 hex digest when it has characters or a length SQS refuses.

    Sizes are checked in UTF-8 bytes before sending: a message over 1 MiB (body and attributes)
    fails alone. Batches hold at most 10 entries and 1 MiB. An entry SQS refuses is retried
    once in a new batch, then reported; nothing fails the other entries.

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
        self.clients = aws_client_pair("sqs", _SDK, options, name=self.name)

    def check_connection(self) -> bool:
        """Read the queue's ARN (``GetQueueAttributes``; ``agent-wait config check --connect``)."""
        self.clients.sync().get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn"]
        )
        return True

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """One SendMessage for a single envelope, else SendMessageBatch requests."""
        messages: list[_Message] = []
        for index, envelope in enumerate(envelopes):
            try:
                messages.append(self._message(index, envelope))
            except ValueError as error:
                outcomes[index] = error
        if len(envelopes) == 1:
            return [self._send_one(message, outcomes) for message in messages]
        batches = chunk(messages, max_count=BATCH_LIMIT, max_bytes=MESSAGE_LIMIT, size=_size)
        return [self._send_batch(batch, outcomes) for batch in batches]

    def _message(self, index: int, envelope: WaitEnvelope) -> _Message:
        body = envelope.to_json().decode("utf-8")
        routing = AWS_MESSAGE_ATTRIBUTES.select(envelope, self.attributes)
        if routing.dropped:
            logger.warning(
                "SQS message of question %s sent without tags %s",
                envelope.question_id,
                "; ".join(f"{name!r} ({why})" for name, why in routing.dropped.items()),
            )
        size = utf8_size(body) + sum(utf8_size(n, "String", v) for n, v in routing.values.items())
        if size > MESSAGE_LIMIT:
            raise ValueError(
                f"the SQS message of question {envelope.question_id!r} is {size} bytes (body and "
                f"attributes), over SQS's {MESSAGE_LIMIT}-byte limit"
            )
        params: dict[str, Any] = {
            "MessageBody": body,
            "MessageAttributes": {
                name: {"DataType": "String", "StringValue": value}
                for name, value in routing.values.items()
            },
        }
        if self.fifo:
            params["MessageGroupId"] = self.message_group_id or fit_identifier(envelope.thread_id)
            params["MessageDeduplicationId"] = fit_identifier(envelope.dedupe_key)
        return _Message(index, params, size)

    def _send_one(self, message: _Message, outcomes: list[DeliveryOutcome]) -> Exchange:
        result = yield "send_message", {"QueueUrl": self.queue_url, **message.params}
        outcomes[message.index] = (
            result
            if isinstance(result, BaseException)
            else aws_receipt(result, cast("Mapping[str, Any]", result).get("MessageId"))
        )

    def _send_batch(self, batch: list[_Message], outcomes: list[DeliveryOutcome]) -> Exchange:
        # Entry ids are the envelopes' positions: unique, and in SQS's id alphabet.
        pending = {str(message.index): message for message in batch}
        refused: dict[str, BaseException] = {}
        for attempt in range(1, 3):  # a refused entry is retried once, then reported
            entries = [{"Id": entry_id, **m.params} for entry_id, m in pending.items()]
            result = yield "send_message_batch", {"QueueUrl": self.queue_url, "Entries": entries}
            if isinstance(result, BaseException):
                for message in pending.values():
                    outcomes[message.index] = result
                return
            response = cast("Mapping[str, Any]", result)
            for entry in response.get("Successful", []):
                outcomes[pending[entry["Id"]].index] = Receipt(entry.get("MessageId"), attempt)
            refused = {
                entry["Id"]: BatchEntryFailed(
                    "SQS",
                    entry.get("Code", "?"),
                    entry.get("Message", ""),
                    entry.get("SenderFault"),
                )
                for entry in response.get("Failed", [])
            }
            pending = {entry_id: m for entry_id, m in pending.items() if entry_id in refused}
            if not pending:
                return
        for entry_id, message in pending.items():
            outcomes[message.index] = refused[entry_id]


def _size(message: _Message) -> int:
    return message.size
