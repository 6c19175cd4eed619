"""Turn questions into envelopes and deliver them to every announcer, containing failures."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
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
    delivered_report,
    new_delivery,
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
    Question,
    ReplyWith,
    Sent,
    WaitEnvelope,
    format_utc,
    trusted,
)
from agent_wait.core._reply_to import check_reply_to
from agent_wait.core._trust import AnswerTrust, reply_trust

if TYPE_CHECKING:
    from pluggy import HookCaller

    from agent_wait.core._hooks import HookManager

logger = logging.getLogger("agent_wait.publish")
_INFO = logging.INFO  # a global, not an attribute of the logging module: read on every publish

ENVELOPE_LIMIT = 256 * 1024
"""Bytes: SNS's message cap, the smallest of the transports agent-wait ships."""

Unsendable = QuestionTooLarge | QuestionNotSendable
"""Why an envelope was not handed to any announcer."""

Announce = BaseAnnounce | Sequence[BaseAnnounce] | str | None
"""What ``announce=`` accepts: an announcer, several, a registered name, or None (configured default)."""

Clock = Callable[[], datetime]


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Digit pairs, indexed by a 10-bit group of the ULID's 130-bit text value.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)


def ulid_text(raw: bytes) -> str:
    """The 26-character text of a 16-byte ULID, exactly as ``str(ulid.ULID(raw))``.

    python-ulid renders character by character, which was a fifth of building an envelope; ten
    bits at a time is three times faster. The ULID itself still comes from python-ulid.
    """
    v = int.from_bytes(raw, "big")
    p = _PAIRS
    return "".join(
        (
            p[v >> 120],
            p[v >> 110 & 1023],
            p[v >> 100 & 1023],
            p[v >> 90 & 1023],
            p[v >> 80 & 1023],
            p[v >> 70 & 1023],
            p[v >> 60 & 1023],
            p[v >> 50 & 1023],
            p[v >> 40 & 1023],
            p[v >> 30 & 1023],
            p[v >> 20 & 1023],
            p[v >> 10 & 1023],
            p[v & 1023],
        )
    )


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
    expires = policy.expires_at(now or utc_now(), question.asked_at)
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
            "event_id": ulid_text(ULID().bytes),
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
        },
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
    questions: Iterable[Question],
    thread_id: str,
    reply_to: Mapping[str, Any] | None,
    clock: Clock | None,
    adjust: HookCaller | None,
    trust: AnswerTrust | None,
) -> tuple[list[WaitEnvelope], dict[str, Unsendable] | None, list[WaitEnvelope]]:
    now = utc_now() if clock is None else clock()
    trust = reply_trust(trust)
    if reply_to is not None:
        reply_to = check_reply_to(reply_to)
    envelopes: list[WaitEnvelope] = []
    for question in questions:  # a loop, not a comprehension: no frame of its own (3.11)
        envelopes.append(
            build_envelope(question, thread_id, reply_to=reply_to, now=now, trust=trust)
        )
    if adjust is not None:
        envelopes = [adjust_envelope(adjust, e) for e in envelopes]
    unsendable: dict[str, Unsendable] | None = None
    for envelope in envelopes:
        try:
            size = len(envelope.to_json())
        except PydanticSerializationError as error:
            unsendable = unsendable or {}
            unsendable[envelope.event_id] = not_sendable(envelope, error)
            continue
        if size > ENVELOPE_LIMIT:
            unsendable = unsendable or {}
            unsendable[envelope.event_id] = _too_large(envelope, size, thread_id)
    if unsendable is None:
        return envelopes, None, envelopes
    return envelopes, unsendable, [e for e in envelopes if e.event_id not in unsendable]


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


_manager: HookManager | None = None
"""The process registry's plugin manager, once plugins are loaded."""


def plugin_hooks() -> PublishHooks:
    # Once per publish, not per question. The manager keeps the lookup until a plugin is
    # registered or unregistered, so with no plugin hook nothing hook-related runs per question.
    global _manager
    manager = _manager
    if manager is None:
        from agent_wait.core._plugins import registry

        manager = _manager = registry().manager
    return manager.publish_hooks()


_NO_HEADERS: Mapping[str, str] = {}


def transport_headers(message: Sent) -> Mapping[str, str]:
    """The headers plugins' ``message_headers`` give for a message (a trace context).

    Send them in the transport's own headers or attributes, after its routing attributes and
    within its limits: with a question's envelope, a lifecycle event, and an answer or start
    message an entry point sends. Empty (and no hook called) when no plugin implements the hook.
    """
    caller = plugin_hooks().headers
    return _NO_HEADERS if caller is None else message_headers(caller, message)


def _record(
    deliveries: list[Delivery],
    announcer: BaseAnnounce,
    envelopes: Sequence[WaitEnvelope],
    outcomes: Sequence[DeliveryOutcome] | BaseException,
    unsendable: Mapping[str, Unsendable] | None,
    thread_id: str,
    duration: float,
    observe: HookCaller | None,
) -> None:
    results = _normalised(announcer, envelopes, outcomes, unsendable)
    name = announcer.name
    verbose = logger.isEnabledFor(logging.INFO)
    for envelope, outcome in zip(envelopes, results, strict=True):
        if outcome is None:
            delivery = new_delivery(
                name, envelope.question_id, envelope.event_id, True, None, None, duration
            )
        elif isinstance(outcome, Receipt):
            delivery = new_delivery(
                name,
                envelope.question_id,
                envelope.event_id,
                True,
                None,
                None,
                duration,
                outcome.attempts,
                outcome.message_id,
                outcome.notes,
            )
        else:
            delivery = new_delivery(
                name,
                envelope.question_id,
                envelope.event_id,
                False,
                f"{type(outcome).__name__}: {outcome}",
                outcome,
                None if isinstance(outcome, Unsendable) else duration,
                outcome.attempts if isinstance(outcome, DeliveryFailed) else None,
            )
        deliveries.append(delivery)
        if verbose or not delivery.ok:
            _log(delivery, thread_id)
        if observe is not None:
            delivery_outcome(observe, delivery, envelope, announcer)


def _normalised(
    announcer: BaseAnnounce,
    envelopes: Sequence[WaitEnvelope],
    outcomes: Sequence[DeliveryOutcome] | BaseException,
    unsendable: Mapping[str, Unsendable] | None,
) -> Sequence[DeliveryOutcome]:
    """One outcome per envelope, in order: questions not sent and a failed call included."""
    if outcomes is _DELIVERED and not unsendable:
        return _DELIVERED
    count = len(envelopes) - len(unsendable or ())
    if isinstance(outcomes, BaseException):
        outcomes = [outcomes] * count
    elif len(outcomes) != count:
        outcomes = [
            RuntimeError(
                f"{type(announcer).__name__} returned {len(outcomes)} outcomes for {count} envelopes"
            )
        ] * count
    if not unsendable:
        return outcomes
    sent = iter(outcomes)
    return [unsendable.get(e.event_id) or next(sent) for e in envelopes]


def _log(delivery: Delivery, thread_id: str) -> None:
    # One structured line per delivery: ids only, never question content or transport secrets.
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


def _deliver_sync(
    announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]
) -> Sequence[DeliveryOutcome] | BaseException:
    try:
        if len(envelopes) == 1:
            receipt = announcer.deliver(envelopes[0])
            return _DELIVERED if receipt is None else (receipt,)
        return announcer.deliver_many(envelopes) if envelopes else ()
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        return error


_DELIVERED: tuple[DeliveryOutcome] = (None,)


async def _deliver_async(
    announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]
) -> tuple[Sequence[DeliveryOutcome] | BaseException, float]:
    if not envelopes:
        return [], 0.0
    start = perf_counter()
    try:
        if len(envelopes) == 1:
            outcomes: Sequence[DeliveryOutcome] | BaseException = [
                await announcer.adeliver(envelopes[0])
            ]
        else:
            outcomes = await announcer.adeliver_many(envelopes)
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        outcomes = error
    return outcomes, perf_counter() - start


def _somewhere(
    announcers: list[BaseAnnounce], envelopes: Sequence[WaitEnvelope]
) -> list[BaseAnnounce]:
    # No announcer means the questions go nowhere: the report is not ok (strict raises).
    if not announcers:
        logger.warning(
            "agent-wait: no announcer; %d question(s) %s were not delivered anywhere",
            len(envelopes),
            [e.question_id for e in envelopes],
        )
    return announcers


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
    manager = _manager  # plugin_hooks() without its frame, once plugins are loaded
    hooks = plugin_hooks() if manager is None else manager.publish_hooks()
    if (
        hooks.quiet
        and reply_to is None
        and isinstance(questions, list)
        and len(questions) == 1
        and isinstance(announce, BaseAnnounce)
    ):
        return _publish_one(questions[0], thread_id, announce, clock, strict, trust)
    if not hooks.operations:
        return _publish(hooks, questions, thread_id, announce, reply_to, clock, strict, trust)
    questions = questions if isinstance(questions, list | tuple) else list(questions)
    if not questions:  # a publish of nothing is no operation
        return _publish(hooks, questions, thread_id, announce, reply_to, clock, strict, trust)
    with Operating(hooks, Operation("publish", thread_id)) as operating:
        report = operating.result = _publish(
            hooks, questions, thread_id, announce, reply_to, clock, strict, trust
        )
    return report


def _publish_one(
    question: Question,
    thread_id: str,
    announcer: BaseAnnounce,
    clock: Clock | None,
    strict: bool,
    trust: AnswerTrust | None,
) -> PublishReport:
    """:func:`_publish` of one question to one announcer, no ``reply_to`` and no publish hook.

    The usual publish (a run parked on one question) in the fewest steps: what publishing adds
    to building and serialising the envelope was a quarter of it. Anything but a quiet success
    (a question not sendable, a failure, a receipt, INFO logging) is recorded as ``_publish`` does.
    """
    envelope = build_envelope(
        question, thread_id, now=utc_now() if clock is None else clock(), trust=reply_trust(trust)
    )
    unsendable: dict[str, Unsendable] | None = None
    try:
        size = len(envelope.to_json())
    except PydanticSerializationError as error:
        unsendable = {envelope.event_id: not_sendable(envelope, error)}
    else:
        if size > ENVELOPE_LIMIT:
            unsendable = {envelope.event_id: _too_large(envelope, size, thread_id)}
    if unsendable is None:
        start = perf_counter()
        receipt: DeliveryOutcome
        try:
            receipt = announcer.deliver(envelope)
        except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
            receipt = error
        duration = perf_counter() - start
        if receipt is None and not logger.isEnabledFor(_INFO):
            return delivered_report(envelope, announcer.name, duration)
        outcomes: Sequence[DeliveryOutcome] = (receipt,)
    else:
        outcomes, duration = (), 0.0
    deliveries: list[Delivery] = []
    _record(deliveries, announcer, (envelope,), outcomes, unsendable, thread_id, duration, None)
    report = PublishReport((envelope,), tuple(deliveries))
    if strict and not report.ok:
        raise AnnounceFailed(report)
    return report


def _publish(
    hooks: PublishHooks,
    questions: Iterable[Question],
    thread_id: str,
    announce: Announce,
    reply_to: Mapping[str, Any] | None,
    clock: Clock | None,
    strict: bool,
    trust: AnswerTrust | None,
) -> PublishReport:
    envelopes, unsendable, sendable = _prepare(
        questions, thread_id, reply_to, clock, hooks.adjust, trust
    )
    deliveries: list[Delivery] = []
    if envelopes:
        observe = hooks.observe
        quiet = observe is None and unsendable is None and not logger.isEnabledFor(logging.INFO)
        announcers = (
            (announce,)
            if isinstance(announce, BaseAnnounce)
            else _somewhere(resolve_announcers(announce), envelopes)
        )
        for item in announcers:
            start = perf_counter()
            outcomes = _deliver_sync(item, sendable)
            duration = perf_counter() - start
            if quiet and outcomes is _DELIVERED:
                # One question delivered with nobody listening: just the outcome.
                envelope = sendable[0]
                deliveries.append(
                    new_delivery(
                        item.name,
                        envelope.question_id,
                        envelope.event_id,
                        True,
                        None,
                        None,
                        duration,
                    )
                )
            else:
                _record(
                    deliveries, item, envelopes, outcomes, unsendable, thread_id, duration, observe
                )
    report = PublishReport(tuple(envelopes), tuple(deliveries))
    if strict and not report.ok:
        raise AnnounceFailed(report)
    return report


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
    hooks = plugin_hooks()
    if not hooks.operations:
        return await _apublish(
            hooks, questions, thread_id, announce, reply_to, clock, strict, trust
        )
    questions = questions if isinstance(questions, list | tuple) else list(questions)
    if not questions:  # a publish of nothing is no operation
        return await _apublish(
            hooks, questions, thread_id, announce, reply_to, clock, strict, trust
        )
    with Operating(hooks, Operation("apublish", thread_id)) as operating:
        report = operating.result = await _apublish(
            hooks, questions, thread_id, announce, reply_to, clock, strict, trust
        )
    return report


async def _apublish(
    hooks: PublishHooks,
    questions: Iterable[Question],
    thread_id: str,
    announce: Announce,
    reply_to: Mapping[str, Any] | None,
    clock: Clock | None,
    strict: bool,
    trust: AnswerTrust | None,
) -> PublishReport:
    envelopes, unsendable, sendable = _prepare(
        questions, thread_id, reply_to, clock, hooks.adjust, trust
    )
    deliveries: list[Delivery] = []
    if envelopes:
        announcers = _somewhere(resolve_announcers(announce), envelopes)
        import asyncio  # here, not at import: sync hosts never pay for asyncio

        results = await asyncio.gather(*(_deliver_async(a, sendable) for a in announcers))
        for item, (outcomes, duration) in zip(announcers, results, strict=True):
            _record(
                deliveries,
                item,
                envelopes,
                outcomes,
                unsendable,
                thread_id,
                duration,
                hooks.observe,
            )
    report = PublishReport(tuple(envelopes), tuple(deliveries))
    if strict and not report.ok:
        raise AnnounceFailed(report)
    return report
