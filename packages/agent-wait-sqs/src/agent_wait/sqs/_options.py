"""The options of the ``sqs`` announcer and entry point (importing it imports no AWS SDK)."""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar

from pydantic import Field, ValidationInfo, field_validator
from pydantic.json_schema import SkipJsonSchema

from agent_wait.aws import AWS_MESSAGE_ATTRIBUTES, AwsOptions
from agent_wait.core import ConfigError, EntryOptions
from agent_wait.core.options import NotBool, PositiveCount, Text
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


SQS_LONGEST = 43200  # seconds: SQS's longest visibility timeout


class SqsEntryOptions(EntryOptions):
    """Options of the ``sqs`` entry point (see ``SqsEntry``).

    The connection options (``client`` to ``config``) are the ``sqs`` announcer's, checked by
    its model when the client is built.
    """

    queue_url: str
    """The FIFO queue's URL (``.fifo``), with a redrive policy."""
    visibility_timeout: Annotated[float, Field(ge=1, le=SQS_LONGEST), NotBool] = 300
    """Seconds a received message stays leased (rounded up to whole seconds, 1 to 43200)."""
    max_attempts: PositiveCount | None = None
    """Deliveries before a message is dead-lettered; default and only allowed value: the
    redrive policy's ``maxReceiveCount``."""
    retry_delay: Annotated[float, Field(ge=0, le=SQS_LONGEST), NotBool] = 1
    """Seconds before a failed message is handed out again (rounded up to whole seconds)."""
    client: SkipJsonSchema[Any] = Field(default=None, exclude=True)
    """A boto3 SQS client to use (and not close) instead of building one."""
    endpoint_url: str | None = None
    """Endpoint of the built client (LocalStack, moto, a VPC endpoint)."""
    region: Text | None = None
    """Region of the built client; default: the queue URL's, else the AWS config's."""
    profile: Text | None = None
    """AWS config profile of the built client."""
    config: Any = None
    """botocore Config of the built client: a table of its options or, from Python, a
    ``botocore.config.Config``."""

    @field_validator("queue_url")
    @classmethod
    def _fifo_queue_url(cls, value: str) -> str:
        match = QUEUE_URL.match(value)
        if match is None or not match["name"].endswith(".fifo"):
            raise ValueError(
                "expected an SQS FIFO queue URL (ending in .fifo: a thread's messages are "
                "handed out one at a time)"
            )
        return value


class SqsConnectionOptions(SqsOptions):
    """The ``sqs`` announcer's model checking the entry point's connection options."""

    kind: ClassVar[str] = "entry point"
