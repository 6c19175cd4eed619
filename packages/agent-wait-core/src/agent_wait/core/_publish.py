"""Turn questions into envelopes and deliver them to every announcer, containing failures."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from time import perf_counter
from typing import TYPE_CHECKING, Any, cast

from pydantic_core import PydanticSerializationError
from ulid import ULID

from agent_wait.core._announce import (
    BaseAnnounce,
    Delivery,
    DeliveryOutcome,
    PublishReport,
    Receipt,
)
from agent_wait.core._durations import format_duration
from agent_wait.core._errors import (
    AnnounceFailed,
    DeliveryFailed,
    QuestionNotSendable,
    QuestionTooLarge,
)
from agent_wait.core._hooks import (
    Operating,
    Operation,
    PublishHooks,
    adjust_envelope,
    delivery_outcome,
    message_headers,
)
from agent_wait.core._models import (
    ENVELOPE_TYPE,
    FollowUp,
    Question,
    ReplyWith,
    Sent,
    WaitEnvelope,
    answerer_problem,
    format_utc,
    trusted,
)
from agent_wait.core._policy import WaitPolicy
from agent_wait.core._trust import AnswerTrust, reply_trust

if TYPE_CHECKING:
    from pluggy import HookCaller

    from agent_wait.core._identity import Identity


logger = logging.getLogger("agent_wait.publish")

ENVELOPE_LIMIT = 256 * 1024
"""Bytes: SNS's message cap, the smallest of the transports agent-wait ships."""

Unsendable = QuestionTooLarge | QuestionNotSendable
"""Why an envelope was not handed to any announcer."""

Announce = BaseAnnounce | Sequence[BaseAnnounce] | str | None
"""What ``announce=`` accepts: an announcer, several, a registered name, or None (configured default)."""

Clock = Callable[[], datetime]


# Who started the run publishing now: every envelope records it as ``started_by``.
_started_by: ContextVar[str | None] = ContextVar("agent_wait_started_by", default=None)


@contextmanager
def started_by(subject: str | Identity | None) -> Generator[None]:
    """Questions published inside the block record who started the run (``started_by``).

    The approver check refuses that person's answer to them unless the policy sets
    ``allow_self_approval``. A host that starts runs for a signed-in person wraps the start
    (and every resume it does for them) in this block.
    """
    # An Identity by its subject; not by isinstance, which would import it on every publish.
    value = subject if subject is None or isinstance(subject, str) else subject.subject
    if value is not None:
        problem = answerer_problem(value)
        if problem:
            raise ValueError(f"started_by: {problem}")
    token = _started_by.set(value)
    try:
        yield
    finally:
        _started_by.reset(token)


def current_starter() -> str | None:
    """Who started the run publishing now, as :func:`started_by` set it, or None."""
    return _started_by.get()


def utc_now() -> datetime:
    """The current time, aware, in UTC."""
    return datetime.now(UTC)


def build_envelope(
    question: Question,
    thread_id: str,
    *,
    reply_to: Mapping[str, Any] | None = None,
    now: datetime | None = None,
    trust: AnswerTrust | None = None,
) -> WaitEnvelope:
    """Build the envelope of one question (fresh ``event_id``; ``expires_at`` from the policy).

    With ``trust`` signing (or enforcing expiry), ``reply_with`` also carries ``token`` (and
    ``expires_at``) for the host to check the answer against.
    """
    if not thread_id:
        raise ValueError(f"thread_id: must be a non-empty string, got {thread_id!r}")
    policy = question.policy
    now = now or utc_now()
    expires = policy.expires_at(now, question.asked_at)
    expires_at = None if expires is None else format_utc(expires)
    reply: dict[str, Any] = {
        "thread_id": thread_id,
        "question_id": question.question_id,
        "answer": None,
    }
    reply_with = (
        # Extra keys live in the model's extras, which only validation fills in.
        ReplyWith.model_validate({**reply, **trust.reply_extras(thread_id, question, expires_at)})
        if trust is not None and trust.marks_expiry
        else trusted(ReplyWith, reply)
    )
    # Every part is already validated (policy, question), and this path runs once per envelope.
    return trusted(
        WaitEnvelope,
        {
            "type": ENVELOPE_TYPE,
            "event_id": str(ULID()),
            "thread_id": thread_id,
            "question_id": question.question_id,
            "question": question.question,
            "allowed_actions": list(policy.allowed_actions),
            "expires_at": expires_at,
            "default": policy.default,
            "answer_ttl": None if policy.answer_ttl is None else format_duration(policy.answer_ttl),
            "source": question.source,
            "reply_to": None if reply_to is None else dict(reply_to),
            "reply_with": reply_with,
            "correlation": policy.correlation,
            "tags": dict(policy.tags),
            "answer_schema": question.answer_schema,
            "context": question.context,
            "approvers": list(policy.approvers),
            "allow_self_approval": policy.allow_self_approval,
            "started_by": current_starter(),
            "quorum": policy.quorum,
            "follow_up": _follow_up(policy, now, question.asked_at),
        },
    )


def _follow_up(policy: WaitPolicy, now: datetime, asked_at: datetime | None) -> FollowUp | None:
    if not (policy.remind or policy.escalate or policy.last_warning):
        return None  # the usual question: nothing more to compute per envelope
    reminders, escalate_at, last_warning_at = policy.follow_up_times(now, asked_at)
    return FollowUp(
        remind_at=[format_utc(at) for at in reminders],
        escalate_at=None if escalate_at is None else format_utc(escalate_at),
        escalate_to=None if policy.escalate is None else dict(policy.escalate.to),
        last_warning_at=None if last_warning_at is None else format_utc(last_warning_at),
    )


def resolve_announcers(announce: Announce) -> list[BaseAnnounce]:
    """Normalise ``announce=`` to a list of announcers (None: the configured default)."""
    if announce is None:
        from agent_wait.core._config import default_announcers

        return default_announcers()
    if isinstance(announce, BaseAnnounce):
        return [announce]
    if isinstance(announce, str):
        from agent_wait.core._plugins import announcer

        return [announcer(announce)]
    announcers = list(announce)
    for index, item in enumerate(announcers):
        if not isinstance(item, BaseAnnounce):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(
                f"announce[{index}]: expected a BaseAnnounce, got {type(item).__name__}"
            )
    return announcers


def _prepare(
    questions: Sequence[Question],
    thread_id: str,
    reply_to: Mapping[str, Any] | None,
    clock: Clock | None,
    adjust: HookCaller | None,
    trust: AnswerTrust | None,
) -> tuple[list[WaitEnvelope], dict[str, Unsendable]]:
    """The envelopes of a publish, and those no transport can take, by ``event_id``."""
    now = utc_now() if clock is None else clock()
    trust = reply_trust(trust)
    if reply_to is not None:
        # Here, not at import: most publishes name no reply_to.
        from agent_wait.core._reply_to import check_reply_to

        reply_to = check_reply_to(reply_to)
    envelopes = [
        build_envelope(question, thread_id, reply_to=reply_to, now=now, trust=trust)
        for question in questions
    ]
    if adjust is not None:
        envelopes = [adjust_envelope(adjust, envelope) for envelope in envelopes]
    unsendable: dict[str, Unsendable] = {}
    for envelope in envelopes:
        problem = _unsendable(envelope, thread_id)
        if problem is not None:
            unsendable[envelope.event_id] = problem
    return envelopes, unsendable


def _unsendable(envelope: WaitEnvelope, thread_id: str) -> Unsendable | None:
    try:
        size = len(envelope.to_json())
    except PydanticSerializationError as error:
        return not_sendable(envelope, error)
    if size > ENVELOPE_LIMIT:
        return _too_large(envelope, size, thread_id)
    return None


def _too_large(envelope: WaitEnvelope, size: int, thread_id: str) -> QuestionTooLarge:
    function = envelope.source.function if envelope.source else None
    return QuestionTooLarge(size, ENVELOPE_LIMIT, function, thread_id_length=len(thread_id))


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def not_sendable(envelope: WaitEnvelope, error: ValueError) -> QuestionNotSendable:
    """The error of an envelope that failed to serialise: where its first lone surrogate is.

    Serialising finds a lone surrogate for free; only this failure path walks the envelope to
    name the field, so the usual publish pays nothing for the check.
    """
    function = envelope.source.function if envelope.source else None
    stack: list[tuple[str, object]] = [("", envelope.model_dump())]
    while stack:
        path, value = stack.pop()
        if isinstance(value, str):
            found = _LONE_SURROGATE.search(value)
            if found:
                # !a: the message must be loggable, and the surrogate itself is not.
                return QuestionNotSendable(
                    f"{path} holds a lone surrogate {found.group()!a} at position "
                    f"{found.start()} (half of a UTF-16 pair: it has no UTF-8 form, so no "
                    "transport can carry it); pass text of whole characters",
                    function,
                    path,
                )
        elif isinstance(value, Mapping):
            items = list(cast("Mapping[object, object]", value).items())
            for key, item in reversed(items):
                name = key if isinstance(key, str) and key.isprintable() else ascii(key)
                stack.append((f"{path}.{name}" if path else name, item))
                stack.append((f"{path or 'the envelope'} (a key)", key))
        elif isinstance(value, list | tuple):
            items = list(enumerate(cast("Sequence[object]", value)))
            stack.extend((f"{path}[{index}]", item) for index, item in reversed(items))
    return QuestionNotSendable(f"its envelope has no JSON form: {error}", function)


def plugin_hooks() -> PublishHooks:
    """The publish and answer hooks the process's plugins implement.

    The plugin manager looks them up again only after a plugin is registered or unregistered,
    so with no plugin hook nothing hook-related runs per question.
    """
    from agent_wait.core._plugins import registry  # here: _plugins imports this module

    return registry().manager.publish_hooks()


def transport_headers(message: Sent) -> Mapping[str, str]:
    """The headers plugins' ``message_headers`` give for a message (a trace context).

    Send them in the transport's own headers or attributes, after its routing attributes and
    within its limits: with a question's envelope, a lifecycle event, and an answer or start
    message an entry point sends. Empty (and no hook called) when no plugin implements the hook.
    """
    caller = plugin_hooks().headers
    return {} if caller is None else message_headers(caller, message)


Outcomes = Sequence[DeliveryOutcome] | BaseException
"""What one announcer's delivery of a batch gave: one outcome per envelope, or the error raised."""


def _deliver(announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]) -> tuple[Outcomes, float]:
    """Deliver the envelopes to one announcer: its outcomes and the seconds it took."""
    start = perf_counter()
    outcomes: Outcomes
    try:
        if len(envelopes) == 1:
            outcomes = [announcer.deliver(envelopes[0])]
        else:
            outcomes = announcer.deliver_many(envelopes) if envelopes else []
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        outcomes = error
    return outcomes, perf_counter() - start


async def _adeliver(
    announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]
) -> tuple[Outcomes, float]:
    """Async :func:`_deliver`."""
    start = perf_counter()
    outcomes: Outcomes
    try:
        if len(envelopes) == 1:
            outcomes = [await announcer.adeliver(envelopes[0])]
        else:
            outcomes = await announcer.adeliver_many(envelopes) if envelopes else []
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        outcomes = error
    return outcomes, perf_counter() - start


def _deliveries(
    announcer: BaseAnnounce,
    envelopes: Sequence[WaitEnvelope],
    unsendable: Mapping[str, Unsendable],
    outcomes: Outcomes,
    duration: float,
) -> list[Delivery]:
    """One :class:`Delivery` per envelope, in order: questions not sent and a failed call included."""
    count = len(envelopes) - len(unsendable)
    if isinstance(outcomes, BaseException):
        outcomes = [outcomes] * count
    elif len(outcomes) != count:
        outcomes = [
            RuntimeError(
                f"{type(announcer).__name__} returned {len(outcomes)} outcomes for {count} envelopes"
            )
        ] * count
    sent = iter(outcomes)
    deliveries: list[Delivery] = []
    for envelope in envelopes:
        outcome = unsendable.get(envelope.event_id) or next(sent)
        ids = (announcer.name, envelope.question_id, envelope.event_id)
        if outcome is None:
            deliveries.append(Delivery(*ids, ok=True, duration=duration))
        elif isinstance(outcome, Receipt):
            deliveries.append(
                Delivery(
                    *ids,
                    ok=True,
                    duration=duration,
                    attempts=outcome.attempts,
                    message_id=outcome.message_id,
                    notes=outcome.notes,
                )
            )
        else:
            deliveries.append(
                Delivery(
                    *ids,
                    ok=False,
                    error=f"{type(outcome).__name__}: {outcome}",
                    exception=outcome,
                    # a question not sent took no time of the transport's
                    duration=None if isinstance(outcome, Unsendable) else duration,
                    attempts=outcome.attempts if isinstance(outcome, DeliveryFailed) else None,
                )
            )
    return deliveries


def _report(
    hooks: PublishHooks,
    thread_id: str,
    envelopes: Sequence[WaitEnvelope],
    deliveries: Sequence[tuple[BaseAnnounce, list[Delivery]]],
    strict: bool,
) -> PublishReport:
    """Log and observe every delivery, then the report (raised with ``strict`` if not ok)."""
    for announcer, delivered in deliveries:
        for envelope, delivery in zip(envelopes, delivered, strict=True):
            _log(delivery, thread_id)
            if hooks.observe is not None:
                delivery_outcome(hooks.observe, delivery, envelope, announcer)
    report = PublishReport(
        tuple(envelopes), tuple(delivery for _, delivered in deliveries for delivery in delivered)
    )
    if strict and not report.ok:
        raise AnnounceFailed(report)
    return report


def _log(delivery: Delivery, thread_id: str) -> None:
    # One structured line per delivery: ids only, never question content or transport secrets.
    if delivery.ok and not logger.isEnabledFor(logging.INFO):
        return
    fields = {
        "announcer": delivery.announcer,
        "thread_id": thread_id,
        "question_id": delivery.question_id,
        "event_id": delivery.event_id,
        "ok": delivery.ok,
    }
    if delivery.ok:
        logger.info("agent-wait delivered %s", fields["question_id"], extra={"agent_wait": fields})
    else:
        fields["error_type"] = type(delivery.exception).__name__
        logger.warning(
            "agent-wait delivery failed: announcer=%s question_id=%s error=%s",
            delivery.announcer,
            delivery.question_id,
            delivery.error,
            extra={"agent_wait": fields},
        )


def _announcers(announce: Announce, envelopes: Sequence[WaitEnvelope]) -> list[BaseAnnounce]:
    """The announcers of a publish of ``envelopes``; none (and a WARNING) means nowhere."""
    if not envelopes:
        return []
    announcers = resolve_announcers(announce)
    # No announcer means the questions go nowhere: the report is not ok (strict raises).
    if not announcers:
        logger.warning(
            "agent-wait: no announcer; %d question(s) %s were not delivered anywhere",
            len(envelopes),
            [e.question_id for e in envelopes],
        )
    return announcers


_NO_OPERATION_HOOKS = PublishHooks(adjust=None, observe=None)
"""What a publish of nothing calls: it is no operation."""


def publish(
    questions: Iterable[Question],
    thread_id: str,
    announce: Announce = None,
    *,
    reply_to: Mapping[str, Any] | None = None,
    clock: Clock | None = None,
    strict: bool = False,
    trust: AnswerTrust | None = None,
) -> PublishReport:
    """Publish one envelope per question to every announcer.

    Args:
        questions: The questions the run is waiting on.
        thread_id: The agent's conversation identity.
        announce: An announcer, a list, a registered name, or None for the configured default
            (``AGENT_WAIT_ANNOUNCE``, ``AGENT_WAIT_CONFIG``, ``agent-wait.toml``,
            ``[tool.agent-wait]`` in pyproject.toml, else the embedded sqlite inbox).
        reply_to: A hint for where answers go, copied into every envelope.
        clock: Returns "now" (aware); ``expires_at`` is measured from it.
        strict: Raise :class:`AnnounceFailed` after every announcer was tried if any delivery
            failed, or if there was no announcer at all (``announce=[]``), so the host can
            leave its inbound message unacknowledged. Without ``strict`` an empty announcer list
            logs a WARNING and the report is not ``ok``.
        trust: The host's answer checks; with secrets, each ``reply_with`` carries a signed
            ``token`` (None: from ``AGENT_WAIT_ANSWER_SECRETS`` and friends, see
            :class:`~agent_wait.core.AnswerTrust`).

    Returns:
        The report: the envelopes and one outcome per announcer and envelope. Announcer errors
        never raise (unless ``strict``).
    """
    hooks = plugin_hooks()
    questions = list(questions)
    operation = Operation("publish", thread_id)
    with Operating(hooks if questions else _NO_OPERATION_HOOKS, operation) as operating:
        envelopes, unsendable = _prepare(questions, thread_id, reply_to, clock, hooks.adjust, trust)
        sendable = [e for e in envelopes if e.event_id not in unsendable]
        announcers = _announcers(announce, envelopes)
        deliveries = [
            (
                announcer,
                _deliveries(announcer, envelopes, unsendable, *_deliver(announcer, sendable)),
            )
            for announcer in announcers
        ]
        report = operating.result = _report(hooks, thread_id, envelopes, deliveries, strict)
    if envelopes and _keep_audit_logs(announcers):
        _audit_published(report, announcers)
    return report


def _keep_audit_logs(announcers: Sequence[object]) -> bool:
    """Whether an announcer keeps an audit log beside its questions (sqlite, PostgreSQL)."""
    return any(callable(getattr(a, "audit_log", None)) for a in announcers)


def _audit_published(report: PublishReport, announcers: Sequence[object]) -> None:
    # Here, not at import: announcers that only carry messages keep no audit log.
    from agent_wait.core._audit import audit_published

    audit_published(report, announcers)


async def apublish(
    questions: Iterable[Question],
    thread_id: str,
    announce: Announce = None,
    *,
    reply_to: Mapping[str, Any] | None = None,
    clock: Clock | None = None,
    strict: bool = False,
    trust: AnswerTrust | None = None,
) -> PublishReport:
    """Async :func:`publish`: all announcers are delivered to concurrently."""
    import asyncio  # here, not at import: sync hosts never pay for asyncio

    hooks = plugin_hooks()
    questions = list(questions)
    operation = Operation("apublish", thread_id)
    with Operating(hooks if questions else _NO_OPERATION_HOOKS, operation) as operating:
        envelopes, unsendable = _prepare(questions, thread_id, reply_to, clock, hooks.adjust, trust)
        sendable = [e for e in envelopes if e.event_id not in unsendable]
        announcers = _announcers(announce, envelopes)
        results = await asyncio.gather(*(_adeliver(a, sendable) for a in announcers))
        deliveries = [
            (announcer, _deliveries(announcer, envelopes, unsendable, *result))
            for announcer, result in zip(announcers, results, strict=True)
        ]
        report = operating.result = _report(hooks, thread_id, envelopes, deliveries, strict)
    if envelopes and _keep_audit_logs(announcers):
        await asyncio.to_thread(_audit_published, report, announcers)
    return report
