"""The policy a ``@wait`` function asks with: deadline, default, allowed actions, routing hints."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Annotated, Any, cast

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
    ValidationInfo,
    field_validator,
    model_validator,
)

from agent_wait.core._durations import format_duration, parse_duration
from agent_wait.core._quorum import APPROVE, Quorum


def _duration(value: object, info: ValidationInfo) -> timedelta | None:
    if value is None:
        return None
    return parse_duration(value, info.field_name or "duration")


def _stated_duration(value: object, info: ValidationInfo) -> timedelta:
    return parse_duration(value, info.field_name or "duration")


Duration = Annotated[
    timedelta | None,
    BeforeValidator(_duration),
    PlainSerializer(lambda d: None if d is None else format_duration(d), return_type=str | None),
    Field(json_schema_extra={"type": ["string", "null"], "format": "duration"}),
]
"""A positive fixed-length ISO 8601 duration (``PT15M``, ``P3D``) or seconds; serialised as ISO 8601."""

StatedDuration = Annotated[
    timedelta,
    BeforeValidator(_stated_duration),
    PlainSerializer(format_duration, return_type=str),
    Field(json_schema_extra={"type": "string", "format": "duration"}),
]
"""A :data:`Duration` that must be given."""

DurationInput = str | int | float | timedelta
"""What a duration field accepts: ISO 8601 text, seconds, or a timedelta."""


GROUP_PREFIX = "group:"
"""An approver entry naming a group rather than a person: ``group:finance``."""

_APPROVER_LIMIT = 64


def approver_problem(value: object) -> str | None:
    """Why ``value`` is not an approver entry (a person, or ``group:`` and a name), or None."""
    if not isinstance(value, str):
        return f"expected a person or 'group:NAME', got {type(value).__name__} {value!r}"
    name = value.removeprefix(GROUP_PREFIX)
    if not name.strip() or name != name.strip():
        return f"expected a person such as 'alice@example.com' or 'group:finance', got {value!r}"
    if len(name) > _APPROVER_LIMIT:
        return f"at most {_APPROVER_LIMIT} characters, got {len(name)}: {value!r}"
    if not name.isprintable():
        return f"control characters are not allowed, got {value!r}"
    return None


class Correlation(BaseModel):
    """Ties a question to an external job: ``{"provider": ..., "id": ...}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    provider: str = Field(min_length=1)
    id: str = Field(min_length=1)


def _durations(value: object, info: ValidationInfo) -> object:
    if value is None:
        return ()
    if isinstance(value, str | int | float | timedelta):
        value = [value]  # one reminder, given alone
    if not isinstance(value, Sequence):
        raise ValueError(f"expected a list of durations such as ['PT1H'], got {value!r}")
    items = list(cast("Sequence[object]", value))
    return tuple(parse_duration(item, f"{info.field_name}[{n}]") for n, item in enumerate(items))


Durations = Annotated[
    tuple[timedelta, ...],
    BeforeValidator(_durations),
    PlainSerializer(lambda ds: [format_duration(d) for d in ds], return_type=list[str]),
    Field(json_schema_extra={"type": "array", "items": {"type": "string", "format": "duration"}}),
]
"""Durations, each ISO 8601 text or seconds, serialised as a list of ISO 8601 text."""


class Escalation(BaseModel):
    """Who else may answer once a question has waited ``after``: the policy's ``escalate``.

    Attributes:
        after: How long after the question was asked it escalates (ISO 8601 or seconds).
        to: The tags of the wider audience, such as ``{"approver_group": "finance-leads"}``:
            announcers route the ``wait.escalated`` event by them, and the stored question
            records them as ``escalated_to`` for the authorization check.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    after: StatedDuration
    to: dict[str, str]

    @field_validator("to")
    @classmethod
    def _audience(cls, value: dict[str, str]) -> dict[str, str]:
        if not value:
            raise ValueError(
                "escalate.to: expected the tags of who else may answer, such as "
                "{'approver_group': 'finance-leads'}, got {}"
            )
        for key, tag in value.items():
            if not key.strip() or not tag.strip():
                raise ValueError(f"escalate.to: {key!r}: {tag!r} is not a usable tag")
        return value


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
        approvers: Who may answer: people (as their identity's subject, ``alice@example.com``)
            and groups (``group:finance``). Empty: anyone who reaches an answer path, unless
            the ``approver_group`` tag or an ``agent_wait_approvers`` hook names some. Checked
            by every answer path before anything is recorded (see docs/governance.md).
        allow_self_approval: Let the person who started the run (``started_by``) answer its
            questions; refused by default (separation of duties).
        quorum: How many distinct people must approve: ``2``, or ``{"approve": 2, "reject": 1}``
            (rejections that end it rejected; 1, the default, makes any reject a veto). The
            question stays open, recording each vote, until the quorum is reached; see
            :class:`~agent_wait.core.Quorum`. None: the first answer decides.
        remind: When to remind the approvers, each a duration after the question was asked
            (``["PT1H", "PT3H"]``), in increasing order and before ``timeout``. The sweeper
            publishes one ``wait.reminder`` event per reminder, once.
        escalate: ``{"after": "PT4H", "to": {"approver_group": "finance-leads"}}``: once the
            question has waited ``after``, the sweeper publishes ``wait.escalated`` (once) and
            records ``to`` on the stored question, which widens who may answer.
        last_warning: How long before the deadline the sweeper publishes ``wait.last_warning``
            (once), the last call before the ``default`` decides; needs ``timeout``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout: Duration = None
    default: Any = None
    answer_ttl: Duration = None
    allowed_actions: tuple[str, ...] = ("approve", "reject")
    tags: dict[str, str] = Field(default_factory=dict[str, str])
    correlation: Correlation | None = None
    approvers: tuple[str, ...] = ()
    allow_self_approval: bool = False
    quorum: Annotated[Quorum | None, BeforeValidator(Quorum.coerce)] = None
    remind: Durations = ()
    escalate: Escalation | None = None
    last_warning: Duration = None

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
            approvers: Sequence[str] = (),
            allow_self_approval: bool = False,
            quorum: Quorum | int | Mapping[str, int] | None = None,
            remind: Sequence[DurationInput] | DurationInput = (),
            escalate: Escalation | Mapping[str, Any] | None = None,
            last_warning: DurationInput | None = None,
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

    @field_validator("approvers")
    @classmethod
    def _usable_approvers(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for approver in value:
            problem = approver_problem(approver)
            if problem:
                raise ValueError(f"approvers: {problem}")
        return value

    @field_validator("tags")
    @classmethod
    def _usable_tags(cls, value: dict[str, str]) -> dict[str, str]:
        for key in value:
            if not key.strip():
                raise ValueError(f"tags: {key!r} is not a usable tag name")
        return value

    @model_validator(mode="after")
    def _quorum_can_approve(self) -> WaitPolicy:
        if self.quorum is not None and APPROVE not in self.allowed_actions:
            raise ValueError(
                f"quorum: counts approve votes, but allowed_actions {list(self.allowed_actions)!r} "
                "has no 'approve'"
            )
        return self

    @model_validator(mode="after")
    def _follow_ups_before_the_deadline(self) -> WaitPolicy:
        reminders = [format_duration(d) for d in self.remind]
        for earlier, later in zip(self.remind, self.remind[1:], strict=False):
            if later <= earlier:
                raise ValueError(
                    f"remind: {reminders!r} must increase (each is measured from when the "
                    "question was asked)"
                )
        if self.last_warning is not None and self.timeout is None:
            raise ValueError(
                f"last_warning: {format_duration(self.last_warning)!r} is measured back from the "
                "deadline, and the policy has no timeout"
            )
        if self.timeout is None:
            return self
        timeout = format_duration(self.timeout)
        for reminder, text in zip(self.remind, reminders, strict=True):
            if reminder >= self.timeout:
                raise ValueError(f"remind: {text!r} is not before the timeout {timeout!r}")
        if self.escalate is not None and self.escalate.after >= self.timeout:
            raise ValueError(
                f"escalate.after: {format_duration(self.escalate.after)!r} is not before the "
                f"timeout {timeout!r}"
            )
        if self.last_warning is not None and self.last_warning >= self.timeout:
            raise ValueError(
                f"last_warning: {format_duration(self.last_warning)!r} before the deadline is "
                f"not after the question was asked (timeout {timeout!r})"
            )
        return self

    def follow_up_times(
        self, published_at: datetime, asked_at: datetime | None = None
    ) -> tuple[list[datetime], datetime | None, datetime | None]:
        """When each reminder, the escalation and the last warning are due, or None."""
        start = asked_at or published_at
        deadline = self.expires_at(published_at, asked_at)
        return (
            [start + d for d in self.remind],
            None if self.escalate is None else start + self.escalate.after,
            None if self.last_warning is None or deadline is None else deadline - self.last_warning,
        )

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
