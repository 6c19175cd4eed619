"""The options of the ``sns`` announcer (importing it imports no AWS SDK)."""

from __future__ import annotations

import re

from pydantic import field_validator

from agent_wait.aws import AWS_MESSAGE_ATTRIBUTES, AwsOptions
from agent_wait.core import ConfigError

TOPIC_ARN = re.compile(
    r"^arn:aws[a-z-]*:sns:(?P<region>[a-z0-9-]+):\d{12}:(?P<name>[A-Za-z0-9_-]{1,256}(?:\.fifo)?)$"
)


class SnsOptions(AwsOptions):
    """Options of the ``sns`` announcer (see ``SnsAnnounce``)."""

    topic_arn: str
    """The topic's ARN, e.g. ``arn:aws:sns:us-east-1:123456789012:approvals``."""
    attributes: dict[str, str] | None = None
    """Fixed message attributes added to every message (name to string value)."""

    @field_validator("topic_arn")
    @classmethod
    def _topic_arn(cls, value: str) -> str:
        if TOPIC_ARN.match(value) is None:
            raise ValueError(
                "expected an SNS topic ARN such as 'arn:aws:sns:us-east-1:123456789012:approvals'"
            )
        return value

    @field_validator("attributes")
    @classmethod
    def _attributes(cls, value: dict[str, str] | None) -> dict[str, str] | None:
        try:
            return AWS_MESSAGE_ATTRIBUTES.fixed("attributes", value) if value is not None else None
        except ConfigError as error:
            raise ValueError(str(error).removeprefix("attributes: ")) from None

    @property
    def fifo(self) -> bool:
        """True for a FIFO topic (``.fifo``)."""
        return self.topic_arn.endswith(".fifo")

    def region_or_default(self) -> str | None:
        """The region option, else the topic ARN's."""
        match = TOPIC_ARN.match(self.topic_arn)
        return self.region if self.region is not None or match is None else match["region"]
