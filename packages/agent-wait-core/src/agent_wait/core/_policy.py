"""The policy a ``@wait`` function asks with: deadline, default, allowed actions, routing hints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
)

from agent_wait.core._durations import format_duration, parse_duration


def _duration(value: object, info: ValidationInfo) -> timedelta | None:
    if value is None:
        return None
    return parse_duration(value, info.field_name or "duration")


Duration = Annotated[
    timedelta | None,
    BeforeValidator(_duration),
    PlainSerializer(lambda d: None if d is None else format_duration(d), return_type=str | None),
    Field(json_schema_extra={"type": ["string", "null"], "format": "duration"}),
]
"""A positive fixed-length ISO 8601 duration (``PT15M``, ``P3D``) or seconds; serialised as ISO 8601."""

DurationInput = str | int | float | timedelta
"""What a duration field accepts: ISO 8601 text, seconds, or a timedelta."""


class Correlation(BaseModel):
    """Ties a question to an external job: ``{"provider": ..., "id": ...}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1)
    id: str = Field(min_length=1)


class WaitPolicy(BaseModel):
    """How a question is asked. Every field but ``allowed_actions`` is advisory for the consumer.

    Attributes:
        timeout: How long until the asker considers the question stale. An ISO 8601 duration
            (``"P3D"``, ``"PT15M"``) or positive seconds; years and months are refused because
            they have no fixed length. Becomes the envelope's ``expires_at``.
        default: What to assume if nobody answers (any JSON). The consumer sends it when
            ``expires_at`` passes.
        answer_ttl: How long an answer stays usable after it is given (ISO 8601 or seconds).
        allowed_actions: The answers that are meaningful; non-empty.
        tags: Routing hints, string to string (SNS message attributes, headers, fields).
        correlation: ``{"provider", "id"}`` when the question is tied to an external job.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: Duration = None
    default: Any = None
    answer_ttl: Duration = None
    allowed_actions: tuple[str, ...] = ("approve", "reject")
    tags: dict[str, str] = Field(default_factory=dict[str, str])
    correlation: Correlation | None = None

    if TYPE_CHECKING:
        # Type checkers see the inputs the validators accept, not only the stored types.
        def __init__(
            self,
            *,
            timeout: DurationInput | None = None,
            default: Any = None,
            answer_ttl: DurationInput | None = None,
            allowed_actions: Sequence[str] = ("approve", "reject"),
            tags: Mapping[str, str] = ...,
            correlation: Correlation | Mapping[str, str] | None = None,
        ) -> None: ...

    @field_validator("allowed_actions")
    @classmethod
    def _non_empty_actions(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        if not value:
            raise ValueError("allowed_actions must name at least one action, got ()")
        for action in value:
            if not action.strip():
                raise ValueError(f"allowed_actions: {action!r} is not a usable action name")
        if len(set(value)) != len(value):
            raise ValueError(f"allowed_actions: {list(value)!r} names an action twice")
        return value

    @field_validator("tags")
    @classmethod
    def _usable_tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.strip():
                raise ValueError(f"tags: {key!r} is not a usable tag name")
        return value

    def expires_at(
        self, published_at: datetime, asked_at: datetime | None = None
    ) -> datetime | None:
        """When the question goes stale: ``(asked_at or published_at) + timeout``, or None."""
        if self.timeout is None:
            return None
        return (asked_at or published_at) + self.timeout

    @classmethod
    def coerce(cls, value: WaitPolicy | Mapping[str, Any] | None) -> WaitPolicy:
        """Accept a policy, a mapping of its fields, or None (the default policy)."""
        if value is None:
            return _DEFAULT
        if isinstance(value, WaitPolicy):
            return value
        return cls.model_validate(value)


_DEFAULT = WaitPolicy()

UNSTATED = WaitPolicy.model_construct(allowed_actions=())
"""The policy of a question agent-wait did not ask (a bare interrupt, a foreign tool's).

Nothing is known of what the asking code accepts, so no allowed actions are published: ``[]``
means "not stated", and no check against them applies. Constructed, not validated: a policy
given to ``@wait`` must still name at least one action.
"""
