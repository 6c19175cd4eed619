"""The options of the ``sqs`` announcer (importing it imports no AWS SDK)."""

from __future__ import annotations

import re

from pydantic import ValidationInfo, field_validator

from agent_wait.aws import AWS_MESSAGE_ATTRIBUTES, AwsOptions
from agent_wait.core import ConfigError
from agent_wait.core.transport import fit_identifier

QUEUE_URL = re.compile(r"^https?://[^/\s]+/[^/\s]+/(?P<name>[A-Za-z0-9_-]{1,80}(?:\.fifo)?)$")
AWS_HOST = re.compile(r"^https://sqs[.-](?P<region>[a-z]{2}(?:-[a-z]+)+-\d)\.amazonaws\.com")


class SqsOptions(AwsOptions):
    """Options of the ``sqs`` announcer (see ``SqsAnnounce``)."""

    queue_url: str
    """The queue's URL, e.g. ``https://sqs.us-east-1.amazonaws.com/123456789012/approvals``."""
    message_group_id: str | None = None
    """FIFO only: one message group for every message instead of the thread id."""
    attributes: dict[str, str] | None = None
    """Fixed message attributes added to every message (name to string value)."""

    @property
    def fifo(self) -> bool:
        """True for a FIFO queue (``.fifo``)."""
        return self.queue_url.endswith(".fifo")

    @field_validator("queue_url")
    @classmethod
    def _queue_url(cls, value: str) -> str:
        if QUEUE_URL.match(value) is None:
            raise ValueError(
                "expected an SQS queue URL such as "
                "'https://sqs.us-east-1.amazonaws.com/123456789012/approvals'"
            )
        return value

    @field_validator("message_group_id")
    @classmethod
    def _group(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is None:
            return None
        queue_url = info.data.get("queue_url")
        if isinstance(queue_url, str) and not queue_url.endswith(".fifo"):
            raise ValueError(
                "only FIFO queues (.fifo) have message groups; this is a standard queue"
            )
        if fit_identifier(value) != value:
            raise ValueError("expected 1-128 letters, digits or ASCII punctuation")
        return value

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        try:
            return AWS_MESSAGE_ATTRIBUTES.fixed("attributes", value) if value is not None else None
        except ConfigError as error:
            raise ValueError(str(error).removeprefix("attributes: ")) from None

    def region_or_default(self) -> str | None:
        """The region option, else the one in an AWS queue URL's host name."""
        if self.region is None and (host := AWS_HOST.match(self.queue_url)):
            return host["region"]
        return self.region
