"""Turn questions into envelopes and deliver them to every announcer, containing failures."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

from ulid import ULID

from agent_wait.core._announce import BaseAnnounce, Delivery, DeliveryOutcome, PublishReport
from agent_wait.core._durations import format_duration
from agent_wait.core._errors import AnnounceFailed, QuestionTooLarge
from agent_wait.core._models import (
    ENVELOPE_TYPE,
    Question,
    ReplyWith,
    WaitEnvelope,
    format_utc,
    trusted,
)

if TYPE_CHECKING:
    from pluggy import HookImpl

logger = logging.getLogger("agent_wait.publish")

ENVELOPE_LIMIT = 256 * 1024
"""Bytes: SNS's message cap, the smallest of the transports agent-wait ships."""

Announce = BaseAnnounce | Sequence[BaseAnnounce] | str | None
"""What ``announce=`` accepts: an announcer, several, a registered name, or None (configured default)."""

Clock = Callable[[], datetime]
_ADJUSTABLE = frozenset({"tags", "reply_to", "correlation"})


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
# Digit pairs, indexed by a 10-bit group of the ULID's 130-bit text value.
_PAIRS = tuple(a + b for a in _CROCKFORD for b in _CROCKFORD)


def ulid_text(raw: bytes) -> str:
    """The 26-character text of a 16-byte ULID, exactly as ``str(ulid.ULID(raw))``.

    python-ulid renders character by character, which was a fifth of building an envelope; ten
    bits at a time is three times faster (issue 7). The ULID itself still comes from python-ulid.
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
) -> WaitEnvelope:
    """Build the envelope of one question (fresh ``event_id``; ``expires_at`` from the policy)."""
    if not thread_id:
        raise ValueError(f"thread_id: must be a non-empty string, got {thread_id!r}")
    policy = question.policy
    expires = policy.expires_at(now or utc_now(), question.asked_at)
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
            "expires_at": None if expires is None else format_utc(expires),
            "default": policy.default,
            "answer_ttl": None if policy.answer_ttl is None else format_duration(policy.answer_ttl),
            "source": question.source,
            "reply_to": None if reply_to is None else dict(reply_to),
            "reply_with": trusted(
                ReplyWith,
                {"thread_id": thread_id, "question_id": question.question_id, "answer": None},
            ),
            "correlation": policy.correlation,
            "tags": dict(policy.tags),
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
) -> tuple[list[WaitEnvelope], dict[str, QuestionTooLarge]]:
    now = (clock or utc_now)()
    adjusters = _adjusters()
    envelopes = [
        _adjusted(build_envelope(q, thread_id, reply_to=reply_to, now=now), adjusters)
        for q in questions
    ]
    oversize: dict[str, QuestionTooLarge] = {}
    for envelope in envelopes:
        size = len(envelope.to_json())
        if size > ENVELOPE_LIMIT:
            function = envelope.source.function if envelope.source else None
            oversize[envelope.event_id] = QuestionTooLarge(
                size, ENVELOPE_LIMIT, function, thread_id_length=len(thread_id)
            )
    return envelopes, oversize


def _adjusters() -> list[HookImpl]:
    from agent_wait.core._plugins import registry

    # Call order (pluggy runs the last registered first). Looked up once per publish, not per
    # envelope: the registry's lock and environment check were a tenth of a batch (issue 7).
    return list(reversed(registry().manager.hook.adjust_envelope.get_hookimpls()))


def _observers() -> list[HookImpl]:
    from agent_wait.core._plugins import registry

    return list(reversed(registry().manager.hook.delivery_outcome.get_hookimpls()))


def _adjusted(envelope: WaitEnvelope, adjusters: Sequence[HookImpl]) -> WaitEnvelope:
    # Each plugin sees the updates of the plugins before it.
    for impl in adjusters:
        try:
            updates: object = impl.function(envelope=envelope)
            if updates is None:
                continue
            if not isinstance(updates, Mapping):
                raise TypeError(f"expected a dict of field updates or None, got {updates!r}")
            changes = cast("Mapping[str, Any]", updates)
            unknown = sorted(set(changes) - _ADJUSTABLE)
            if unknown:
                raise ValueError(f"may only change {sorted(_ADJUSTABLE)}, not {unknown}")
            envelope = WaitEnvelope.model_validate({**envelope.model_dump(), **changes})
        except Exception:
            logger.exception("adjust_envelope hook of plugin %r failed; skipped", impl.plugin_name)
    return envelope


def _record(
    announcer: BaseAnnounce,
    envelopes: Sequence[WaitEnvelope],
    outcomes: Sequence[DeliveryOutcome] | BaseException,
    oversize: Mapping[str, QuestionTooLarge],
    thread_id: str,
) -> list[Delivery]:
    sendable = [e for e in envelopes if e.event_id not in oversize]
    if not isinstance(outcomes, BaseException) and len(outcomes) != len(sendable):
        outcomes = RuntimeError(
            f"{type(announcer).__name__} returned {len(outcomes)} outcomes for {len(sendable)} envelopes"
        )
    deliveries: list[Delivery] = []
    results = dict(
        zip((e.event_id for e in sendable), _expand(outcomes, len(sendable)), strict=True)
    )
    results.update(oversize)
    observers = _observers()
    for envelope in envelopes:
        error = results[envelope.event_id]
        delivery = Delivery(
            announcer=announcer.name,
            question_id=envelope.question_id,
            event_id=envelope.event_id,
            ok=error is None,
            error=None if error is None else f"{type(error).__name__}: {error}",
            exception=error,
        )
        _log(delivery, thread_id)
        _observe(delivery, envelope, observers)
        deliveries.append(delivery)
    return deliveries


def _expand(
    outcomes: Sequence[DeliveryOutcome] | BaseException, count: int
) -> list[DeliveryOutcome]:
    if isinstance(outcomes, BaseException):
        return [outcomes] * count
    return list(outcomes)


def _log(delivery: Delivery, thread_id: str) -> None:
    # One structured line per delivery: ids only, never question content or transport secrets.
    if delivery.ok and not logger.isEnabledFor(logging.INFO):
        return  # the usual case: skip building the fields of a line nobody reads
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


def _observe(delivery: Delivery, envelope: WaitEnvelope, observers: Sequence[HookImpl]) -> None:
    # One call per plugin: pluggy stops at the first impl that raises, and one broken observer
    # must not silence the others.
    for impl in observers:
        try:
            impl.function(delivery=delivery, envelope=envelope)
        except Exception:
            logger.exception("delivery_outcome hook of plugin %r failed", impl.plugin_name)


def _deliver_sync(
    announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]
) -> Sequence[DeliveryOutcome] | BaseException:
    if not envelopes:
        return []
    try:
        if len(envelopes) == 1:
            announcer.deliver(envelopes[0])
            return [None]
        return announcer.deliver_many(envelopes)
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        return error


async def _deliver_async(
    announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]
) -> Sequence[DeliveryOutcome] | BaseException:
    if not envelopes:
        return []
    try:
        if len(envelopes) == 1:
            await announcer.adeliver(envelopes[0])
            return [None]
        return await announcer.adeliver_many(envelopes)
    except Exception as error:  # noqa: BLE001 - announcer failures are reported, never raised into the run
        return error


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

    Returns:
        The report: the envelopes and one outcome per announcer and envelope. Announcer errors
        never raise (unless ``strict``).
    """
    envelopes, oversize = _prepare(questions, thread_id, reply_to, clock)
    deliveries: list[Delivery] = []
    if envelopes:
        sendable = [e for e in envelopes if e.event_id not in oversize]
        announcers = _somewhere(resolve_announcers(announce), envelopes)
        for item in announcers:
            outcomes = _deliver_sync(item, sendable)
            deliveries.extend(_record(item, envelopes, outcomes, oversize, thread_id))
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
) -> PublishReport:
    """Async :func:`publish`: all announcers are delivered to concurrently."""
    envelopes, oversize = _prepare(questions, thread_id, reply_to, clock)
    deliveries: list[Delivery] = []
    if envelopes:
        sendable = [e for e in envelopes if e.event_id not in oversize]
        announcers = _somewhere(resolve_announcers(announce), envelopes)
        import asyncio  # here, not at import: sync hosts never pay for asyncio

        results = await asyncio.gather(*(_deliver_async(a, sendable) for a in announcers))
        for item, outcomes in zip(announcers, results, strict=True):
            deliveries.extend(_record(item, envelopes, outcomes, oversize, thread_id))
    report = PublishReport(tuple(envelopes), tuple(deliveries))
    if strict and not report.ok:
        raise AnnounceFailed(report)
    return report
