"""SnsAnnounce: one SNS message per question; PublishBatch when a publish has several."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from agent_wait.aws import (
    AwsBatchAnnounce,
    Call,
    Message,
    aws_client_pair,
    boto3_sdk,
    message_attributes,
    sendable_json,
)
from agent_wait.core import WaitEnvelope
from agent_wait.core.transport import fit_identifier, utf8_size
from agent_wait.sns._options import SnsOptions

logger = logging.getLogger(__name__)

MESSAGE_LIMIT = 262_144
"""Bytes (UTF-8) of message, subject and attributes, per message and per PublishBatch request
(AWS's default topic limit; a topic raised to 1 MiB still accepts it)."""
BATCH_LIMIT = 10
"""Entries per PublishBatch request (AWS)."""
SUBJECT_LIMIT = 99
"""Characters: AWS wants a subject "less than 100 characters long"."""


class SnsAnnounce(AwsBatchAnnounce):
    """Publishes each envelope as one SNS message; several in PublishBatch requests.

    ``Message`` is the envelope JSON and ``Subject`` ``"wait.created: <function or
    question_id>"`` (printable ASCII, under 100 characters). Message attributes (``String``)
    carry ``type``, ``thread_id``, the fixed ``attributes`` and the policy's tags (sorted by
    name), so subscription filter policies can route on them: at most 10, and tags that do not
    fit, have an empty value or an invalid name are left out with a warning naming them. On a
    FIFO topic (``.fifo``) ``MessageGroupId`` is the thread id and ``MessageDeduplicationId``
    the envelope's ``dedupe_key``; either is replaced by its SHA-256 hex digest when it has
    characters or a length SNS refuses.

    SNS takes only XML 1.0's characters in a message or an attribute value. The message's JSON
    escapes any other (U+FFFE, U+FFFF): a subscriber decodes the same value. An attribute value
    has its control characters and noncharacters replaced by U+FFFD, logged at WARNING and
    listed in the delivery's ``notes``.

    Sizes are checked in UTF-8 bytes before sending: a message over 256 KiB (message, subject
    and attributes) fails alone. Batches hold at most 10 entries and 256 KiB. An entry SNS
    refuses through no fault of its own (``SenderFault`` false) is retried once in a new batch,
    then reported; one at fault is reported at once; nothing fails the other entries.

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
    service = "SNS"
    batch_limit = BATCH_LIMIT
    request_limit = MESSAGE_LIMIT
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
        self.clients = aws_client_pair("sns", boto3_sdk("agent-wait-sns"), options, name=self.name)

    @property
    def destination(self) -> str:
        """The topic's name (the last part of its ARN)."""
        return self.topic_arn.rsplit(":", 1)[-1]

    def check_connection(self) -> bool:
        """Read the topic's attributes (``GetTopicAttributes``; ``config check --connect``)."""
        self.clients.sync().get_topic_attributes(TopicArn=self.topic_arn)
        return True

    def message(self, envelope: WaitEnvelope) -> Message:
        """The Publish parameters of one envelope, its size (message, subject, attributes), notes."""
        body = sendable_json(envelope.to_json().decode("utf-8"))
        subject = _subject(envelope)
        notes: list[str] = []
        attributes, attributes_size = message_attributes(
            envelope, self.attributes, what="SNS message published", logger=logger, notes=notes
        )
        size = utf8_size(body, subject) + attributes_size
        if size > MESSAGE_LIMIT:
            raise ValueError(
                f"the SNS message of question {envelope.question_id!r} is {size} bytes (message, "
                f"subject and attributes), over SNS's {MESSAGE_LIMIT}-byte limit"
            )
        params: dict[str, Any] = {
            "Message": body,
            "Subject": subject,
            "MessageAttributes": attributes,
        }
        if self.fifo:
            params["MessageGroupId"] = fit_identifier(envelope.thread_id)
            params["MessageDeduplicationId"] = fit_identifier(envelope.dedupe_key)
        return params, size, notes

    def single_request(self, params: dict[str, Any]) -> Call:
        """Publish."""
        return "publish", {"TopicArn": self.topic_arn, **params}

    def batch_request(self, entries: Sequence[tuple[str, dict[str, Any]]]) -> Call:
        """PublishBatch."""
        return "publish_batch", {
            "TopicArn": self.topic_arn,
            "PublishBatchRequestEntries": [
                {"Id": entry_id, **params} for entry_id, params in entries
            ],
        }


def _subject(envelope: WaitEnvelope) -> str:
    about = envelope.source.function if envelope.source else envelope.question_id
    # SNS wants text without line breaks or control characters; printable ASCII is safe for
    # every endpoint (email subjects included).
    text = "".join(c if " " <= c <= "~" else "?" for c in f"{envelope.type}: {about}")
    return text if len(text) <= SUBJECT_LIMIT else text[: SUBJECT_LIMIT - 3] + "..."
