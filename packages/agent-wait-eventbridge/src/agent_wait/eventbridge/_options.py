"""The options of the ``eventbridge`` announcer (importing it imports no AWS SDK)."""

from __future__ import annotations

import re

from pydantic import field_validator

from agent_wait.aws import AwsOptions

# botocore's pattern for EventBusName: a name, or the ARN of a bus.
BUS = re.compile(
    r"^(?:arn:aws[\w-]*:events:(?P<region>[a-z]+-[a-z]+-[\w-]+):\d{12}:event-bus/)?[.\-_A-Za-z0-9]+$"
)


class EventBridgeOptions(AwsOptions):
    """Options of the ``eventbridge`` announcer (see ``EventBridgeAnnounce``)."""

    bus_name: str
    """The event bus: a name (``"default"`` for the account's default bus) or an ARN."""
    source: str = "agent-wait"
    """The events' ``Source`` (``aws.`` is reserved for AWS services)."""

    @field_validator("bus_name")
    @classmethod
    def _bus_name(cls, value: str) -> str:
        if BUS.match(value) is None or len(value) > 1600:
            raise ValueError("expected an event bus name (letters, digits, '.', '-', '_') or ARN")
        return value

    @field_validator("source")
    @classmethod
    def _source(cls, value: str) -> str:
        if not 1 <= len(value) <= 256 or value.lower().startswith("aws."):
            raise ValueError(
                "expected 1-256 characters not starting with 'aws.' (reserved for AWS services)"
            )
        return value

    def region_or_default(self) -> str | None:
        """The region option, else the bus ARN's."""
        match = BUS.match(self.bus_name)
        return self.region if self.region is not None or match is None else match["region"]
