"""The message contract: the envelope agent-wait sends, and the messages a host receives.

Field names, order, types and null semantics follow the documented message formats exactly.
"""

from __future__ import annotations

import difflib
import logging
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, Literal, TypeVar, cast
from urllib.parse import quote

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import from_json

from agent_wait.core._durations import format_duration, parse_duration
from agent_wait.core._policy import Correlation, WaitPolicy, approver_problem
from agent_wait.core._quorum import Quorum

ENVELOPE_TYPE = "wait.created"
_logger = logging.getLogger("agent_wait.messages")
_M = TypeVar("_M", bound=BaseModel)
_ULID = r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$"


def format_utc(moment: datetime) -> str:
    """Render an aware datetime as RFC 3339 UTC with a ``Z`` and whole seconds.

    Whole seconds in one fixed format keep the text sortable (DynamoDB and SQL range queries
    compare these strings).
    """
    if moment.tzinfo is not UTC:  # the usual case skips the offset lookup (runs per envelope)
        offset = moment.utcoffset()
        if offset is None:
            raise ValueError(
                f"datetime {moment.isoformat()!r} has no timezone; pass an aware datetime"
            )
        if offset:
            moment = moment.astimezone(UTC)
    # isoformat is several times faster than strftime, and this runs once per envelope.
    return moment.isoformat(timespec="seconds")[:19] + "Z"


def trusted(cls: type[_M], values: dict[str, Any]) -> _M:
    """Build a model from values that are already valid, skipping validation entirely.

    Envelopes are built from a validated policy and question on every publish; pydantic's own
    ``model_construct`` costs more than serialising the result.
    """
    instance = _new(cls)
    _setattr(instance, "__dict__", values)
    fields_set = _every_field.get(cls)
    if fields_set is None or len(values) != len(fields_set):
        fields_set = set(values)
        if cls.model_config.get("frozen") and len(values) == len(cls.model_fields):
            _every_field[cls] = fields_set
    _setattr(instance, "__pydantic_fields_set__", fields_set)
    _setattr(instance, "__pydantic_extra__", None)
    _setattr(instance, "__pydantic_private__", None)
    return instance


_new = object.__new__
_setattr = object.__setattr__  # module-level: saves a lookup per call on the publish path
_every_field: dict[type[BaseModel], set[str]] = {}
"""Per frozen model :func:`trusted` built with every field: one fields-set for all instances.

A set per envelope was almost half of its memory. Sharing is safe because a frozen
model never adds to its set, and ``model_copy`` copies it before changing it.
"""


_RFC3339 = re.compile(
    r"^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:[Zz]|[+-]\d{2}:\d{2})$"
)


def _utc_text(value: object) -> object:
    if isinstance(value, datetime):
        return format_utc(value)
    if isinstance(value, str):
        if not _RFC3339.match(value):
            raise ValueError(
                f"{value!r} is not an RFC 3339 timestamp such as '2026-09-14T09:00:00Z'"
            )
        return format_utc(datetime.fromisoformat(value.replace("z", "Z").replace("Z", "+00:00")))
    return value


UtcTimestamp = Annotated[
    str,
    BeforeValidator(_utc_text),
    Field(
        pattern=r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$", json_schema_extra={"format": "date-time"}
    ),
]
"""RFC 3339 UTC text ending in ``Z``; datetimes and offset timestamps are converted."""


def _iso_duration_text(value: object) -> object:
    if value is None or isinstance(value, str | int | float):
        return None if value is None else format_duration(parse_duration(value, "answer_ttl"))
    return value


IsoDuration = Annotated[
    str, BeforeValidator(_iso_duration_text), Field(json_schema_extra={"format": "duration"})
]


class Source(BaseModel):
    """Which ``@wait`` function asked: ``{"function": name}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    function: str = Field(min_length=1)


_TRUST_KEYS: dict[str, Any] = {
    "token": {
        "type": "string",
        "pattern": r"^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$",
        "description": "Present when the host signs replies: binds the answer to this thread, "
        "question and question content. Copy it unchanged; a host that signs refuses an answer "
        "without it.",
    },
    "expires_at": {
        "type": "string",
        "format": "date-time",
        "description": "Present when the host signs replies or enforces deadlines: the "
        "question's expires_at, carried back so the host can tell a late answer. Copy it "
        "unchanged.",
    },
}


def _with_trust_keys(schema: dict[str, Any]) -> None:
    # Extra keys, not fields: a reply without them serialises exactly as before.
    schema["properties"].update(_TRUST_KEYS)


class ReplyWith(BaseModel):
    """A filled-in reply: copy it, set ``answer``, send it to the agent's entry point.

    Extra keys are kept: a plugin may add one (the OpenTelemetry plugin adds ``traceparent``)
    through ``adjust_envelope``, a host that signs replies adds ``token`` (and ``expires_at``),
    and a consumer that copies ``reply_with`` verbatim carries them back in the answer without
    knowing what they are.
    """

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra=_with_trust_keys)

    thread_id: str = Field(min_length=1)
    question_id: str = Field(min_length=1)
    answer: None = None


def _is_none(value: object) -> bool:
    return value is None


def _is_empty(value: list[Any]) -> bool:
    return not value


def _is_false(value: bool) -> bool:
    return not value


def _no_default(schema: dict[str, Any]) -> None:
    # An optional field is absent when unset, never null: the schema must not suggest null.
    schema.pop("default", None)


def check_reply(thread_id: str, question_id: str, reply_with: ReplyWith) -> None:
    """Raise ValueError unless ``reply_with`` carries the envelope's own ids."""
    if (reply_with.thread_id, reply_with.question_id) != (thread_id, question_id):
        raise ValueError(
            "reply_with must carry the envelope's own thread_id and question_id, got "
            f"{reply_with.thread_id!r}/{reply_with.question_id!r}"
        )


_Text = Annotated[str, Field(min_length=1)]

MAX_CONTEXT_MESSAGES = 10
"""The most conversation messages a question's context carries."""
MESSAGE_TEXT_LIMIT = 500
"""The most characters of one message's text a question's context carries."""


class ContextMessage(BaseModel):
    """One message of the conversation that led to a question: who said it, and its text."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    role: str = Field(
        min_length=1,
        max_length=32,
        description="Who said it, in the framework's words: user, assistant, tool, system.",
    )
    text: str = Field(
        min_length=1,
        max_length=MESSAGE_TEXT_LIMIT,
        description=f"Its text, cut to {MESSAGE_TEXT_LIMIT} characters (ending in an ellipsis "
        "when cut).",
    )


class CallContext(BaseModel):
    """Where in a run a question was asked: each key present only when the framework tells it.

    Two nested agents asking the same bare question publish the same ``question``; this tells
    them apart. ``source`` is unchanged by it (null for a bare interrupt).
    """

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra={"minProperties": 1})

    node: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The graph node that asked (LangGraph node name, Strands multi-agent node id).",
    )
    namespace: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The asking task's path through nested graphs (LangGraph checkpoint_ns).",
    )
    tool: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The name of the tool whose call asked.",
    )
    tool_call_id: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The model's id of that tool call.",
    )
    framework: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The agent framework of the run: langgraph, pydantic_ai, strands, "
        "openai_agents, google_adk.",
    )
    agent: _Text | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The name of the agent that asked, when it has one.",
    )
    messages: list[ContextMessage] = Field(
        default_factory=list[ContextMessage],
        max_length=MAX_CONTEXT_MESSAGES,
        exclude_if=_is_empty,
        json_schema_extra=_no_default,
        description="The conversation's last messages, oldest first, text only, when the host "
        f"shares them (with share_messages(n)); at most {MAX_CONTEXT_MESSAGES}.",
    )

    @model_validator(mode="after")
    def _says_something(self) -> CallContext:
        named = (self.node, self.namespace, self.tool, self.tool_call_id, self.framework)
        if named == (None,) * len(named) and self.agent is None and not self.messages:
            raise ValueError(
                "context: names none of node, namespace, tool, tool_call_id, framework, agent, "
                "messages"
            )
        return self


def _no_reminders(value: list[str]) -> bool:
    return not value


class FollowUp(BaseModel):
    """When the sweeper follows an open question up: the envelope's ``follow_up``.

    From the policy's ``remind``, ``escalate`` and ``last_warning``; each key present only
    when the policy states it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", json_schema_extra={"minProperties": 1})

    remind_at: list[UtcTimestamp] = Field(
        default_factory=list[str],
        exclude_if=_no_reminders,
        json_schema_extra=_no_default,
        description="When each wait.reminder is due, earliest first.",
    )
    escalate_at: UtcTimestamp | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="When wait.escalated is due.",
    )
    escalate_to: dict[str, str] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The tags of who else may answer once escalated, such as "
        "{'approver_group': 'finance-leads'}; present with escalate_at.",
    )
    last_warning_at: UtcTimestamp | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="When wait.last_warning is due, before expires_at.",
    )

    @model_validator(mode="after")
    def _escalation_whole(self) -> FollowUp:
        if (self.escalate_at is None) != (self.escalate_to is None):
            raise ValueError("follow_up: escalate_at and escalate_to come together")
        if not (self.remind_at or self.escalate_at or self.last_warning_at):
            raise ValueError("follow_up: names none of remind_at, escalate_at, last_warning_at")
        return self

    def steps(self) -> list[tuple[str, str]]:
        """Every step as ``(name, due)``: ``reminder:1``..., ``escalated``, ``last_warning``."""
        found = [(f"{REMINDER_STEP}{n}", at) for n, at in enumerate(self.remind_at, start=1)]
        if self.escalate_at is not None:
            found.append((ESCALATED_STEP, self.escalate_at))
        if self.last_warning_at is not None:
            found.append((LAST_WARNING_STEP, self.last_warning_at))
        return found


REMINDER_STEP = "reminder:"
ESCALATED_STEP = "escalated"
LAST_WARNING_STEP = "last_warning"


class WaitEnvelope(BaseModel):
    """One question, as every announcer publishes it (the ``wait.created`` event).

    Build envelopes with :func:`agent_wait.core.publish`; construct one directly only to
    validate a message (``WaitEnvelope.model_validate_json(data)``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["wait.created"] = ENVELOPE_TYPE
    event_id: str = Field(
        pattern=_ULID, description="ULID, fresh on every publish; not the dedupe key."
    )
    thread_id: str = Field(min_length=1, description="The agent's conversation identity.")
    question_id: str = Field(
        min_length=1, description="The question's identity, stable across republishes."
    )
    question: Any = Field(description="What is being asked; opaque to every adapter.")
    allowed_actions: list[str] = Field(description="Which answers are meaningful. Advisory.")
    expires_at: UtcTimestamp | None = Field(
        description="When the asker considers the question stale. Advisory."
    )
    default: Any = Field(description="What to assume if nobody answers. Advisory.")
    answer_ttl: IsoDuration | None = Field(description="How long an answer stays usable. Advisory.")
    source: Source | None = Field(
        description="{'function': name} for a @wait question; null for a bare interrupt."
    )
    reply_to: dict[str, Any] | None = Field(
        description="Where to send the answer, if the host published a hint."
    )
    reply_with: ReplyWith = Field(description="A filled-in reply: copy it, set answer, send it.")
    correlation: Correlation | None = Field(description="{'provider', 'id'} of an external job.")
    tags: dict[str, str] = Field(description="Routing hints from the policy; never null.")
    answer_schema: dict[str, Any] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The JSON Schema an answer must match, when the asker stated one. Present "
        "only then: an envelope without it carries exactly the other fields.",
    )
    context: CallContext | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="Where in the run the question was asked (node, nested graph, tool call), "
        "when the framework tells it. Present only then.",
    )
    approvers: list[str] = Field(
        default_factory=list[str],
        exclude_if=_is_empty,
        json_schema_extra=_no_default,
        description="Who may answer: people and 'group:NAME' entries, from the policy. Present "
        "only when the policy names some; absent, anyone reaching an answer path may answer "
        "(unless the approver_group tag maps to members).",
    )
    allow_self_approval: bool = Field(
        default=False,
        exclude_if=_is_false,
        json_schema_extra=_no_default,
        description="True when the person who started the run may answer it. Present only then.",
    )
    started_by: str | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="Who started the run that asked, when the host says so: an answer from "
        "them is refused unless allow_self_approval. Present only then.",
    )

    @field_validator("approvers", "allow_self_approval", mode="before")
    @classmethod
    def _absent_is_default(cls, value: object, info: ValidationInfo) -> object:
        # A store that keeps each field in its own column reads an absent one as null.
        if value is None:
            return [] if info.field_name == "approvers" else False
        return value

    @field_validator("approvers")
    @classmethod
    def _usable_approvers(cls, value: list[str]) -> list[str]:
        for approver in value:
            problem = approver_problem(approver)
            if problem:
                raise ValueError(problem)
        return value

    quorum: Quorum | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="How many distinct people must approve ({'approve': N, 'reject': M}), "
        "when the policy asks for more than one. Present only then.",
    )
    follow_up: FollowUp | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="When the sweeper reminds, escalates and gives a last warning, when the "
        "policy asks for any of them. Present only then.",
    )

    @model_validator(mode="after")
    def _reply_matches(self) -> WaitEnvelope:
        check_reply(self.thread_id, self.question_id, self.reply_with)
        return self

    @property
    def dedupe_key(self) -> str:
        """``"wait.created:<thread_id>:<question_id>"``: what consumers and transports deduplicate on.

        A question id is unique within its thread only: Strands hook interrupt ids depend on the
        interrupt's name alone, and tool call ids from scripted or replayed models repeat. The
        thread id is percent-encoded (no ``:`` or non-ASCII left), so the key is ASCII whenever
        the question id is, and two threads never share one.
        """
        return f"{self.type}:{quote(self.thread_id, safe='')}:{self.question_id}"

    def to_json(self) -> bytes:
        """The envelope as compact UTF-8 JSON, fields in contract order."""
        return self.__pydantic_serializer__.to_json(self)

    def to_dict(self) -> dict[str, Any]:
        """The envelope as plain JSON-compatible Python data."""
        return self.model_dump(mode="json")


ANSWERED_TYPE = "wait.answered"
EXPIRED_TYPE = "wait.expired"
ANSWER_REFUSED_TYPE = "wait.answer_refused"
CLOSING_TYPES = (ANSWERED_TYPE, EXPIRED_TYPE, ANSWER_REFUSED_TYPE)
"""What became of a question: what ``lifecycle_events = true`` opts in to."""
REMINDER_TYPE = "wait.reminder"
ESCALATED_TYPE = "wait.escalated"
LAST_WARNING_TYPE = "wait.last_warning"
FOLLOW_UP_TYPES = (REMINDER_TYPE, ESCALATED_TYPE, LAST_WARNING_TYPE)
"""The sweeper's follow-ups of an open question: opted in to by name."""
LIFECYCLE_TYPES = (*CLOSING_TYPES, *FOLLOW_UP_TYPES)
REFUSAL_REASON_LIMIT = 1000
"""The longest ``reason`` of a ``wait.answer_refused`` event (a longer one is cut)."""


class LifecycleEvent(BaseModel):
    """What became of a question, or a follow-up of an open one.

    ``wait.answered``: a host took its answer; ``wait.expired``: the sweeper sent its default;
    ``wait.answer_refused``: a host refused an answer and the question stays pending. The
    follow-ups the sweeper publishes while a question is open, each once: ``wait.reminder``
    (with ``reminder``), ``wait.escalated`` (with ``escalated_to``) and ``wait.last_warning``;
    they, and the sweeper's ``wait.expired``, carry the question's ``envelope``, so a channel
    can ask again.

    Published only to announcers that opted in (``BaseAnnounce.with_lifecycle_events``, or
    ``lifecycle_events`` in their configuration entry): a consumer written for question
    envelopes alone would take it for one.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal[
        "wait.answered",
        "wait.expired",
        "wait.answer_refused",
        "wait.reminder",
        "wait.escalated",
        "wait.last_warning",
    ] = Field(
        description="wait.answered: a host took an answer; wait.expired: the sweeper sent the "
        "question's default; wait.answer_refused: a host refused an answer (invalid_answer, "
        "or resume_failed with the question still pending) and still waits for one; "
        "wait.reminder, wait.escalated, wait.last_warning: the sweeper's follow-ups of a "
        "question still open."
    )
    event_id: str = Field(pattern=_ULID, description="ULID, fresh on every event.")
    thread_id: str = Field(min_length=1, description="The question's thread.")
    question_id: str = Field(min_length=1, description="The question.")
    at: UtcTimestamp = Field(description="When it happened.")
    by: str | None = Field(
        description="Who closed it: the sweeper's name for wait.expired and the follow-ups; "
        "for wait.answered the answer message's answered_by (who its sender says answered), "
        "null without one."
    )
    outcome: str = Field(
        min_length=1,
        description="What happened: the host's outcome (resumed, held) for wait.answered, "
        "default_sent for wait.expired, invalid_answer or resume_failed for "
        "wait.answer_refused, reminded, escalated or warned for the follow-ups.",
    )
    reason: Annotated[str, Field(max_length=REFUSAL_REASON_LIMIT)] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="wait.answer_refused only: why the host refused the answer, for the person "
        "who gave it (at most 1000 characters).",
    )
    answer_digest: (
        Annotated[str, Field(pattern=r"^sha256:[0-9a-f]{64}$")] | SkipJsonSchema[None]
    ) = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="wait.answer_refused only: sha256 of the refused answer's canonical JSON, "
        "so a store reopens the question only while it still records that answer.",
    )
    reminder: Annotated[int, Field(ge=1)] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="wait.reminder only: which reminder of the policy's remind list, from 1.",
    )
    escalated_to: dict[str, str] | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="wait.escalated only: the tags of who else may answer now.",
    )
    envelope: WaitEnvelope | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="The follow-ups and the sweeper's wait.expired: the question's envelope "
        "as published, so a channel can show the question, its deadline and its default "
        "again, and route by its tags.",
    )

    @property
    def dedupe_key(self) -> str:
        """``"<type>:<thread_id>:<question_id>"``, thread id percent-encoded as in an envelope's.

        Never the question's own key: a FIFO queue or an index keyed on that would drop the
        event as a repeat of the question. A ``wait.reminder`` ends in ``:<reminder>``, so the
        second reminder is not taken for a repeat of the first.
        """
        key = f"{self.type}:{quote(self.thread_id, safe='')}:{self.question_id}"
        return key if self.reminder is None else f"{key}:{self.reminder}"

    @property
    def question_dedupe_key(self) -> str:
        """The ``dedupe_key`` of the question's envelope: where a transport keyed its row."""
        return f"{ENVELOPE_TYPE}:{quote(self.thread_id, safe='')}:{self.question_id}"

    def to_json(self) -> bytes:
        """The event as compact UTF-8 JSON, fields in order."""
        return self.__pydantic_serializer__.to_json(self)


class MoreAnswer(BaseModel):
    """One more answer in an answer message's ``more_answers``: another question of the thread.

    Extra fields (those the question's ``reply_with`` carried: ``token``, ``expires_at``) are
    kept, as on :class:`Answer`.
    """

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra=_with_trust_keys)

    question_id: str = Field(min_length=1, description="Which question; from its reply_with.")
    answer: Any = Field(description="The answer to that question. Any JSON.")
    valid_until: UtcTimestamp | None = Field(default=None, description="The answer's own expiry.")

    @field_validator("answer")
    @classmethod
    def _not_too_deep(cls, value: Any) -> Any:
        return _shallow_enough(value)


ANSWERED_BY_LIMIT = 64
"""The longest ``answered_by``: a name or an address, never a document."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def answerer_problem(value: object) -> str | None:
    """Why ``value`` is not a name an answer message can carry as ``answered_by``, or None."""
    if not isinstance(value, str):
        return f"expected a name such as 'alice', got {type(value).__name__} {value!r}"
    if not value.strip():
        return f"expected a name such as 'alice', got {value!r}"
    if len(value) > ANSWERED_BY_LIMIT:
        return f"at most {ANSWERED_BY_LIMIT} characters, got {len(value)}: {value!r}"
    if _CONTROL.search(value):
        return f"control characters are not allowed, got {value!r}"
    return None


def _answerer_schema(schema: dict[str, Any]) -> None:
    _no_default(schema)
    schema.update(
        minLength=1,
        maxLength=ANSWERED_BY_LIMIT,
        # No control character anywhere, and one that is not blank.
        pattern=r"^[^\x00-\x1f\x7f-\x9f]*[^\s\x00-\x1f\x7f-\x9f][^\x00-\x1f\x7f-\x9f]*$",
    )


IDENTITY_SOURCE_PATTERN = r"^[a-z][a-z0-9-]{0,31}$"
"""An answer message's ``identity_source``: a short lower-case word such as ``oidc``.

Core's answer paths say ``oidc``, ``proxy``, ``sso``, ``api-token``, ``shared-secret``,
``local``, ``cli`` and ``claimed``; a channel plugin names its own (its documentation says
which), with no edit here.
"""
_SOURCE = re.compile(IDENTITY_SOURCE_PATTERN)


def identity_source_problem(value: object) -> str | None:
    """Why ``value`` is not an ``identity_source``, or None."""
    if isinstance(value, str) and _SOURCE.match(value):
        return None
    return f"expected a short lower-case word such as 'oidc' or 'cli', got {value!r}"


def _identity_source_schema(schema: dict[str, Any]) -> None:
    _no_default(schema)
    schema["pattern"] = IDENTITY_SOURCE_PATTERN


class Answer(BaseModel):
    """The recommended inbound answer message. Extra fields (those ``reply_with`` carried) are kept.

    ``more_answers`` (optional) answers further pending questions of the same thread in the
    same message, so the run resumes once for all of them; a host that does not know the field
    still reads the first answer. ``answered_by`` (optional) names who answered, as the sender
    claims it; a host reports it in ``wait.answered`` and checks nothing against it.
    """

    model_config = ConfigDict(frozen=True, extra="allow", json_schema_extra=_with_trust_keys)

    thread_id: str = Field(min_length=1, description="Which conversation; copied from reply_with.")
    question_id: str = Field(
        min_length=1, description="Which question; its presence makes this an answer."
    )
    answer: Any = Field(description="Received verbatim by the @wait function. Any JSON.")
    valid_until: UtcTimestamp | None = Field(default=None, description="The answer's own expiry.")
    more_answers: list[MoreAnswer] = Field(
        default_factory=list[MoreAnswer],
        exclude_if=_is_empty,
        json_schema_extra=_no_default,
        description="Answers to further pending questions of the same thread, resumed together "
        "with this one in one step. Optional: a host that ignores it still reads the first.",
    )
    answered_by: str | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_answerer_schema,
        description="Who answered (every answer of the message), as the sender claims it: "
        "a name of 1 to 64 characters. Optional: a host reports it as the by of wait.answered; "
        "a signed reply token does not cover it.",
    )

    identity_source: str | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_identity_source_schema,
        description="How the sender established answered_by, a short lower-case word: oidc, "
        "proxy, sso, api-token, shared-secret, local, cli, claimed, or a channel's own. "
        "Optional; present when the sender verified (or labelled) the identity.",
    )

    @field_validator("identity_source", mode="before")
    @classmethod
    def _a_source(cls, value: object) -> object:
        problem = None if value is None else identity_source_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("answered_by", mode="before")
    @classmethod
    def _a_name(cls, value: object) -> object:
        problem = None if value is None else answerer_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _each_question_once_in_one_thread(self) -> Answer:
        if not self.more_answers:
            return self  # one answer: nothing to repeat
        ids = [self.question_id, *(m.question_id for m in self.more_answers)]
        twice = sorted({i for i in ids if ids.count(i) > 1})
        if twice:
            raise ValueError(f"more_answers: question {twice[0]!r} is answered twice")
        for index, more in enumerate(self.more_answers):
            # A token is checked against the thread its answer names: an item naming another
            # thread would pass with that thread's token and resume this one.
            other = (more.model_extra or {}).get("thread_id", self.thread_id)
            if other != self.thread_id:
                raise ValueError(
                    f"more_answers[{index}].thread_id: {other!r} is not the message's thread_id "
                    f"{self.thread_id!r}; one message answers questions of one thread"
                )
        return self

    def entries(self) -> list[Answer]:
        """Every answer the message carries, each as a single :class:`Answer`, in order."""
        if not self.more_answers:
            return [self]
        first = self.model_copy(update={"more_answers": []})
        # Whoever sent the message answered each of them.
        by = {} if self.answered_by is None else {"answered_by": self.answered_by}
        if self.identity_source is not None:
            by["identity_source"] = self.identity_source
        return [
            first,
            *(
                Answer.model_validate({**m.model_dump(), "thread_id": self.thread_id, **by})
                for m in self.more_answers
            ),
        ]

    @field_validator("answer")
    @classmethod
    def _not_too_deep(cls, value: Any) -> Any:
        return _shallow_enough(value)


def _shallow_enough(value: Any) -> Any:
    # An answer sent as JSON text cannot nest deeper (the parser refuses it); one the host
    # decoded itself is held to the same limit before a checkpoint serialiser or canonical
    # JSON recurses into it and crashes.
    if _nests_deeper(value, ANSWER_DEPTH_LIMIT):
        raise ValueError(
            f"nested deeper than {ANSWER_DEPTH_LIMIT} levels of arrays and objects, more than "
            "a JSON message may carry"
        )
    return value


ANSWER_DEPTH_LIMIT = 199
"""How deep arrays and objects may nest in an answer: what the JSON parser accepts in a message."""


def _nests_deeper(value: object, limit: int) -> bool:
    if isinstance(value, str | int | float | bool | None):
        return False  # a scalar nests nothing (the usual answer)
    # Iterative on purpose: recursion is what this guards against.
    stack: list[tuple[object, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: list[object] = list(cast("Mapping[object, object]", item).values())
        elif isinstance(item, list | tuple):
            children = list(cast("list[object] | tuple[object, ...]", item))
        else:
            continue
        if depth == limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


class StartMessage(BaseModel):
    """The recommended inbound start message: no ``question_id``."""

    model_config = ConfigDict(frozen=True, extra="allow")

    thread_id: str = Field(min_length=1)
    input: Any = None
    started_by: str | SkipJsonSchema[None] = Field(
        default=None,
        exclude_if=_is_none,
        json_schema_extra=_no_default,
        description="Who starts the run (optional): each question the run asks records it as "
        "its started_by, so that person cannot approve it unless allow_self_approval. 1 to 64 "
        "characters, no control characters.",
    )

    @field_validator("started_by", mode="before")
    @classmethod
    def _a_starter(cls, value: object) -> object:
        problem = None if value is None else answerer_problem(value)
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="before")
    @classmethod
    def _not_an_answer(cls, data: object) -> object:
        if is_answer(data):
            raise ValueError("a start message has no question_id; this is an answer")
        return data


class PendingResult(BaseModel):
    """What an async-mode ``@wait`` call returns instead of running."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    status: Literal["pending_approval"] = "pending_approval"
    question_id: str
    function: str


def is_answer(message: object) -> bool:
    """True if an inbound message is an answer: a mapping with a ``question_id`` key."""
    return isinstance(message, Mapping) and "question_id" in message


def _from_json(message: str | bytes) -> object:
    try:
        return from_json(message)
    except ValueError as error:
        # Not JSON (empty, truncated, not UTF-8, nested deeper than the parser allows): refused
        # like any other malformed message, with a ValidationError, not a bare ValueError.
        raise ValidationError.from_exception_data(
            "message",
            [{"type": "json_invalid", "loc": (), "input": message, "ctx": {"error": str(error)}}],
        ) from None


def message_warnings(message: object) -> list[str]:
    """What looks wrong in a start message that is probably a mistyped answer.

    A message without ``question_id`` is a start message, so an answer whose id key is misspelt
    (``questionid``, ``questionId``, ``question-id``) starts or republishes the thread instead
    of answering. Returns one line per suspicious key: ``answer`` itself, and any key close to
    ``question_id``. Empty for answers, for anything that is not a mapping, and for clean start
    messages.
    """
    if is_answer(message) or not isinstance(message, Mapping):
        return []
    found: list[str] = []
    for key in cast("Mapping[object, Any]", message):
        if not isinstance(key, str) or key in _START_KEYS:
            continue
        if key == "answer":
            found.append(
                "start message carries 'answer' but no 'question_id': it starts or republishes "
                "the thread instead of answering; did you mean to send question_id?"
            )
        elif _close_to_question_id(key):
            found.append(
                f"start message has key {key!r}, not 'question_id': it starts or republishes the "
                "thread instead of answering; did you mean question_id?"
            )
    return found


_START_KEYS = frozenset({"thread_id", "input", "started_by"})


def _close_to_question_id(key: str) -> bool:
    normal = key.strip().lower().replace("-", "_").replace(" ", "_")
    # 0.85 catches one dropped, doubled or swapped character, not merely related words
    # ("question", "questions").
    return bool(difflib.get_close_matches(normal, ["question_id"], n=1, cutoff=0.85))


Sent = WaitEnvelope | LifecycleEvent | Answer | StartMessage
"""What agent-wait sends through a transport: a question's envelope, a lifecycle event, or an
answer or start message an entry point sends (see the ``message_headers`` hook)."""


def parse_message(message: Mapping[str, Any] | str | bytes) -> Answer | StartMessage:
    """Validate an inbound message as an :class:`Answer` or a :class:`StartMessage`.

    A start message that looks like a mistyped answer (see :func:`message_warnings`) is
    returned as a start message, as the contract says, and each warning is logged at WARNING
    on ``agent_wait.messages``, so every ``handle_message`` reports it.

    Raises:
        pydantic.ValidationError: With field-level errors.
    """
    data: object = _from_json(message) if isinstance(message, str | bytes) else message
    if is_answer(data):
        return Answer.model_validate(data)
    start = StartMessage.model_validate(data)
    for warning in message_warnings(data):
        _logger.warning("thread %r: %s", start.thread_id, warning)
    return start


class Question(BaseModel):
    """A question an agent run is waiting on, before it becomes an envelope.

    Attributes:
        question_id: Stable identity (the framework's interrupt id, or the derived async id).
        question: What is asked: ``{"function", "args"}`` for ``@wait``, any JSON otherwise.
        policy: How it was asked.
        asked_at: When it was asked, if known; ``expires_at`` is measured from it, else from
            publish time.
        source: ``{"function": name}`` for a ``@wait`` question, None for a bare interrupt.
        answer_schema: The JSON Schema an answer must match, when the asker stated one
            (LangGraph's ``interrupt(value, response_schema=...)``); the envelope's
            ``answer_schema``.
        context: Where in the run it was asked, when the framework tells it; the envelope's
            ``context``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    question_id: str = Field(min_length=1)
    question: Any
    policy: WaitPolicy = Field(default_factory=WaitPolicy)
    asked_at: datetime | None = None
    source: Source | None = None
    answer_schema: dict[str, Any] | None = None
    context: CallContext | None = None
