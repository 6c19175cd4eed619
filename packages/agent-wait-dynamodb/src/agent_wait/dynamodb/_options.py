"""The options of the ``dynamodb`` announcer (importing it imports no AWS SDK)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import Field, field_validator, model_validator

from agent_wait.aws import AwsOptions
from agent_wait.core import WaitEnvelope
from agent_wait.core.options import Duration, NotBool

DEFAULT_TTL_AFTER = 30 * 86_400
"""Seconds a row lives past its question's expiry (or publish) when only ``ttl_attribute`` is set."""
DEFAULT_CONCURRENCY = 16
"""Conditional puts in flight at once on the async path."""
MAX_CONCURRENCY = 256
ROW_ATTRIBUTES = frozenset({"pk", "sk", "status", "dedupe_key", *WaitEnvelope.model_fields})
TABLE_NAME = re.compile(
    r"^(?:[A-Za-z0-9_.-]{3,255}|arn:aws[a-z-]*:dynamodb:[a-z0-9-]+:\d{12}:table/[A-Za-z0-9_.-]{3,255})$"
)


class DynamoDbOptions(AwsOptions):
    """Options of the ``dynamodb`` announcer (see ``DynamoDbAnnounce``)."""

    table_name: str
    """The table (name or ARN)."""
    ttl_attribute: str | None = None
    """Name of the table's TTL attribute; each row gets it as epoch seconds."""
    ttl_after: Duration | None = None
    """How long a row lives after its question's ``expires_at`` (or after the publish when it
    has none): an ISO 8601 duration or seconds. Default 30 days when ``ttl_attribute`` is set."""

    max_concurrency: Annotated[int, Field(gt=0, le=MAX_CONCURRENCY), NotBool] = DEFAULT_CONCURRENCY
    """Puts in flight at once on the async path (1 sends them one by one)."""

    @field_validator("table_name")
    @classmethod
    def _table_name(cls, value: str) -> str:
        if TABLE_NAME.match(value) is None:
            raise ValueError("expected 3-255 letters, digits, '_', '-' or '.' (or a table ARN)")
        return value

    @field_validator("ttl_attribute")
    @classmethod
    def _ttl_attribute(cls, value: str | None) -> str | None:
        if value is not None and (not 1 <= len(value) <= 255 or value in ROW_ATTRIBUTES):
            raise ValueError(
                "expected an attribute name that is not one of the row's own "
                f"({', '.join(sorted(ROW_ATTRIBUTES))})"
            )
        return value

    @model_validator(mode="after")
    def _ttl_needs_attribute(self) -> DynamoDbOptions:
        if self.ttl_after is not None and self.ttl_attribute is None:
            raise ValueError("option 'ttl_after' needs ttl_attribute, the attribute to put it in")
        return self
