"""SnsAnnounce: one SNS message per question; PublishBatch when a publish has several."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.core import BatchEntryFailed, DeliveryOutcome, WaitEnvelope
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
from agent_wait.sns._options import SnsOptions

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
    raise ImportError("SnsAnnounce needs boto3: pip install agent-wait-sns") from error


def _aio_session() -> type[Any]:
    # Imported on the async path's first use: aiobotocore is the [async] extra.
    from aiobotocore.session import AioSession

    return AioSession


_SDK = AwsSdk(
    boto3.Session,
    _aio_session,
    ProfileNotFound,
    Config,
    "agent-wait-sns",
    client_error=ClientError,
    sdk_error=BotoCoreError,
    connection_errors=(BotoConnectionError, HTTPClientError),
)

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 262_144
"""Bytes (UTF-8) of message, subject and attributes, per message and per PublishBatch request
(AWS's default topic limit; a topic raised to 1 MiB still accepts it)."""
BATCH_LIMIT = 10
"""Entries per PublishBatch request (AWS)."""
SUBJECT_LIMIT = 99
"""Characters: AWS wants a subject "less than 100 characters long"."""


@dataclass(frozen=True, slots=True)
class _Message:
    index: int
    params: dict[str, Any]
    size: int


class SnsAnnounce(ClientAnnounce):
    """Publishes each envelope as one SNS message; several in PublishBatch requests.

    ``Message`` is the envelope JSON and ``Subject`` ``"wait.created: <function or
    question_id>"`` (printable ASCII, under 100 characters). Message attributes (``String``)
    carry ``type``, ``thread_id``, the fixed ``attributes`` and the policy's tags (sorted by
    name), so subscription filter policies can route on them: at most 10, and tags that do not
    fit, have an empty value or an invalid name are left out with a warning naming them. On a
    FIFO topic (``.fifo``) ``MessageGroupId`` is the thread id and ``MessageDeduplicationId``
    the envelope's ``dedupe_key``; either is replaced by its SHA-256 hex digest when it has
    characters or a length SNS refuses.

    Sizes are checked in UTF-8 bytes before sending: a message over 256 KiB (message, subject
    and attributes) fails alone. Batches hold at most 10 entries and 256 KiB; an entry SNS
    refuses is reported without failing the others.

    Args:
        topic_arn: The topic's ARN.
        attributes: Fixed message attributes added to every message (name to string value).
        client: A boto3 SNS client to use (and not close) instead of building one.
        async_client: An aiobotocore SNS client to use (and not close) on the async path.
        endpoint_url: Endpoint of the built clients (LocalStack, moto, a VPC endpoint).
        region: Region of the built clients; default: the topic ARN's.
        profile: AWS config profile of the built clients.
        config: A ``botocore.config.Config`` (or a table of its options) merged over the built
            clients' own: standard retries and an ``agent-wait/<version>`` User-Agent suffix.

    Raises:
        ConfigError: An option is invalid; the message names it and the value.
    """

    name = "sns"
    options_model = SnsOptions

    def __init__(
        self,
        topic_arn: str,
        *,
        attributes: Mapping[str, str] | None = None,
        client: Any = None,
        async_client: Any = None,
        endpoint_url: str | None = None,
        region: str | None = None,
        profile: str | None = None,
        config: Any = None,
    ) -> None:
        options = SnsOptions.parse(
            self.name,
            {
                "topic_arn": topic_arn,
                "attributes": attributes,
                "client": client,
                "async_client": async_client,
                "endpoint_url": endpoint_url,
                "region": region,
                "profile": profile,
                "config": config,
            },
        )
        self.topic_arn = options.topic_arn
        self.fifo = options.fifo
        self.attributes = options.attributes or {}
        options = options.model_copy(update={"region": options.region_or_default()})
        self.clients = aws_client_pair("sns", _SDK, options, name=self.name)

    def check_connection(self) -> bool:
        """Read the topic's attributes (``GetTopicAttributes``; ``config check --connect``)."""
        self.clients.sync().get_topic_attributes(TopicArn=self.topic_arn)
        return True

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """One Publish for a single envelope, else PublishBatch requests."""
        messages: list[_Message] = []
        for index, envelope in enumerate(envelopes):
            try:
                messages.append(self._message(index, envelope))
            except ValueError as error:
                outcomes[index] = error
        if len(envelopes) == 1:
            return [self._publish_one(message, outcomes) for message in messages]
        batches = chunk(messages, max_count=BATCH_LIMIT, max_bytes=MESSAGE_LIMIT, size=_size)
        return [self._publish_batch(batch, outcomes) for batch in batches]

    def _message(self, index: int, envelope: WaitEnvelope) -> _Message:
        body = envelope.to_json().decode("utf-8")
        subject = _subject(envelope)
        routing = AWS_MESSAGE_ATTRIBUTES.select(envelope, self.attributes)
        if routing.dropped:
            logger.warning(
                "SNS message of question %s published without tags %s",
                envelope.question_id,
                "; ".join(f"{name!r} ({why})" for name, why in routing.dropped.items()),
            )
        size = utf8_size(body, subject) + sum(
            utf8_size(name, "String", value) for name, value in routing.values.items()
        )
        if size > MESSAGE_LIMIT:
            raise ValueError(
                f"the SNS message of question {envelope.question_id!r} is {size} bytes (message, "
                f"subject and attributes), over SNS's {MESSAGE_LIMIT}-byte limit"
            )
        params: dict[str, Any] = {
            "Message": body,
            "Subject": subject,
            "MessageAttributes": {
                name: {"DataType": "String", "StringValue": value}
                for name, value in routing.values.items()
            },
        }
        if self.fifo:
            params["MessageGroupId"] = fit_identifier(envelope.thread_id)
            params["MessageDeduplicationId"] = fit_identifier(envelope.dedupe_key)
        return _Message(index, params, size)

    def _publish_one(self, message: _Message, outcomes: list[DeliveryOutcome]) -> Exchange:
        result = yield "publish", {"TopicArn": self.topic_arn, **message.params}
        outcomes[message.index] = (
            result
            if isinstance(result, BaseException)
            else aws_receipt(result, cast("Mapping[str, Any]", result).get("MessageId"))
        )

    def _publish_batch(self, batch: list[_Message], outcomes: list[DeliveryOutcome]) -> Exchange:
        # Entry ids are the envelopes' positions: unique, and in SNS's id alphabet.
        entries = {str(message.index): message for message in batch}
        result = yield (
            "publish_batch",
            {
                "TopicArn": self.topic_arn,
                "PublishBatchRequestEntries": [{"Id": i, **m.params} for i, m in entries.items()],
            },
        )
        if isinstance(result, BaseException):
            for message in batch:
                outcomes[message.index] = result
            return
        response = cast("Mapping[str, Any]", result)
        for entry in response.get("Successful", []):
            outcomes[entries[entry["Id"]].index] = aws_receipt(response, entry.get("MessageId"))
        for entry in response.get("Failed", []):
            outcomes[entries[entry["Id"]].index] = BatchEntryFailed(
                "SNS", entry.get("Code", "?"), entry.get("Message", ""), entry.get("SenderFault")
            )


def _subject(envelope: WaitEnvelope) -> str:
    about = envelope.source.function if envelope.source else envelope.question_id
    # SNS wants text without line breaks or control characters; printable ASCII is safe for
    # every endpoint (email subjects included).
    text = "".join(c if " " <= c <= "~" else "?" for c in f"{envelope.type}: {about}")
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 3] + "..."


def _size(message: _Message) -> int:
    return message.size
