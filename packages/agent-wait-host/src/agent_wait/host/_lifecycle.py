"""Lifecycle events: tell the announcers that opted in what became of a question.

A question was answered, expired, or had its answer refused by the host; or, still open, the
sweeper reminds its approvers, escalates it, or gives the last warning before its default.

Like question delivery, a failure is reported (a :class:`Delivery` that is not ok, and a
WARNING), never raised into the host or the sweeper.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import datetime
from time import perf_counter

from ulid import ULID

from agent_wait.core._announce import BaseAnnounce, Delivery, Receipt
from agent_wait.core._models import (
    REFUSAL_REASON_LIMIT,
    LifecycleEvent,
    WaitEnvelope,
    format_utc,
)
from agent_wait.core._publish import Announce, resolve_announcers, utc_now

logger = logging.getLogger("agent_wait.publish")


def lifecycle_event(
    kind: str,
    thread_id: str,
    question_id: str,
    *,
    outcome: str,
    by: str | None = None,
    at: datetime | None = None,
    reason: str | None = None,
    answer_digest: str | None = None,
    reminder: int | None = None,
    escalated_to: dict[str, str] | None = None,
    envelope: WaitEnvelope | None = None,
) -> LifecycleEvent:
    """A new event (fresh ``event_id``; ``at`` defaults to now).

    ``reason`` and ``answer_digest`` are a ``wait.answer_refused`` event's; a longer reason
    than :data:`REFUSAL_REASON_LIMIT` is cut. ``reminder`` is a ``wait.reminder``'s,
    ``escalated_to`` a ``wait.escalated``'s, ``envelope`` every follow-up's (and the
    sweeper's ``wait.expired``'s).
    """
    if reason is not None and len(reason) > REFUSAL_REASON_LIMIT:
        reason = reason[: REFUSAL_REASON_LIMIT - 1] + "…"
    return LifecycleEvent.model_validate(
        {
            "type": kind,
            "event_id": str(ULID()),
            "thread_id": thread_id,
            "question_id": question_id,
            "at": format_utc(at or utc_now()),
            "by": by,
            "outcome": outcome,
            "reason": reason,
            "answer_digest": answer_digest,
            "reminder": reminder,
            "escalated_to": escalated_to,
            "envelope": envelope,
        }
    )


def event_announcers(announce: Announce, kind: str) -> list[BaseAnnounce]:
    """The announcers of ``announce`` that opted in to ``kind``; a registered name never has."""
    if isinstance(announce, str):
        return []
    try:
        announcers = resolve_announcers(announce)
    except Exception as error:  # noqa: BLE001 - a broken configuration must not fail the host
        logger.warning(
            "agent-wait lifecycle event %s not published: no announcers (%s: %s)",
            kind,
            type(error).__name__,
            error,
        )
        return []
    return [a for a in announcers if kind in a.lifecycle_events]


def _delivery(
    announcer: BaseAnnounce,
    event: LifecycleEvent,
    outcome: Receipt | Exception | None,
    duration: float,
) -> Delivery:
    if isinstance(outcome, Exception):
        logger.warning(
            "agent-wait lifecycle event failed: announcer=%s type=%s question_id=%s error=%s",
            announcer.name,
            event.type,
            event.question_id,
            type(outcome).__name__,
        )
        return Delivery(
            announcer.name,
            event.question_id,
            event.event_id,
            False,
            f"{type(outcome).__name__}: {outcome}",
            outcome,
            duration,
        )
    receipt = outcome or Receipt()
    return Delivery(
        announcer.name,
        event.question_id,
        event.event_id,
        True,
        None,
        None,
        duration,
        receipt.attempts,
        receipt.message_id,
        receipt.notes,
    )


def publish_events(events: Sequence[LifecycleEvent], announce: Announce) -> tuple[Delivery, ...]:
    """Deliver each event to the announcers of ``announce`` that opted in to its type.

    Returns one :class:`Delivery` per announcer and event; nothing raises.
    """
    deliveries: list[Delivery] = []
    for event in events:
        for announcer in event_announcers(announce, event.type):
            start = perf_counter()
            try:
                outcome: Receipt | Exception | None = announcer.deliver_event(event)
            except Exception as error:  # noqa: BLE001 - reported, never raised into the host
                outcome = error
            deliveries.append(_delivery(announcer, event, outcome, perf_counter() - start))
    return tuple(deliveries)


async def apublish_events(
    events: Sequence[LifecycleEvent], announce: Announce
) -> tuple[Delivery, ...]:
    """Async :func:`publish_events`."""
    deliveries: list[Delivery] = []
    for event in events:
        for announcer in event_announcers(announce, event.type):
            start = perf_counter()
            try:
                outcome: Receipt | Exception | None = await announcer.adeliver_event(event)
            except Exception as error:  # noqa: BLE001 - reported, never raised into the host
                outcome = error
            deliveries.append(_delivery(announcer, event, outcome, perf_counter() - start))
    return tuple(deliveries)
