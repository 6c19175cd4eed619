"""Announcers deliver envelopes; a PublishReport records every outcome."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, ClassVar, Self

from agent_wait.core._closing import Closing
from agent_wait.core._models import LIFECYCLE_TYPES, LifecycleEvent, WaitEnvelope

if TYPE_CHECKING:
    from agent_wait.core._options import AnnouncerOptions


@dataclass(frozen=True, slots=True)
class Receipt:
    """What the transport said about an envelope it took, returned by ``deliver``.

    Attributes:
        message_id: The transport's id of the message (SQS or SNS ``MessageId``, EventBridge
            ``EventId``, a Redis stream id...), when it gives one.
        attempts: How many times the transport was tried, when the announcer knows.
        notes: What the announcer changed so that the transport takes the message (an attribute
            value with characters the service refuses, replaced), one line each.
    """

    message_id: str | None = None
    attempts: int | None = None
    notes: tuple[str, ...] = ()


DeliveryOutcome = Receipt | BaseException | None
"""Per-envelope result of ``deliver_many``: a :class:`Receipt` or None when delivered, else the
exception."""


class BaseAnnounce(Closing):
    """Base class of every announcer.

    Subclass it and write :meth:`deliver`. Override :meth:`adeliver` for a native async client,
    and :meth:`deliver_many` / :meth:`adeliver_many` when the transport can batch. A batching
    announcer may write only those (batch first): :meth:`deliver` then sends a batch of one
    through :meth:`deliver_many` and raises its error, and :meth:`adeliver` does the same
    through :meth:`adeliver_many` when that is overridden. Raising from
    any of them is safe: :func:`agent_wait.core.publish` contains it and records it in the report.
    Raise :class:`agent_wait.core.DeliveryFailed` for the transport's own errors, saying whether a
    retry may succeed, and return a :class:`Receipt` when the transport gives a message id.

    Attributes:
        name: How the announcer appears in reports and logs. Announcers built from config get
            their entry-point name; otherwise it defaults to the class name.
        options_model: The announcer's options (a subclass of
            :class:`agent_wait.core.AnnouncerOptions`): configuration is validated against it
            before the constructor is called, and ``agent-wait plugins --json`` prints its JSON
            Schema. None only for announcers written before options models existed.
    """

    name: str = ""
    options_model: ClassVar[type[AnnouncerOptions] | None] = None
    lifecycle_events: frozenset[str] = frozenset()
    """The lifecycle event types this announcer publishes (see :meth:`with_lifecycle_events`)."""

    def __init_subclass__(cls) -> None:
        super().__init_subclass__()
        if not cls.__dict__.get("name"):
            cls.name = cls.__name__

    def deliver(self, envelope: WaitEnvelope) -> Receipt | None:
        """Deliver one envelope, raising on failure; return a :class:`Receipt` or None.

        The default serves batch-first announcers: a batch of one through an overridden
        :meth:`deliver_many`, its error raised.
        """
        if type(self).deliver_many is BaseAnnounce.deliver_many:
            raise NotImplementedError(
                f"{type(self).__name__} must implement deliver() or deliver_many()"
            )
        return _raise_outcome(self.deliver_many([envelope])[0])

    async def adeliver(self, envelope: WaitEnvelope) -> Receipt | None:
        """Deliver one envelope without blocking the event loop.

        The default is a batch of one through an overridden :meth:`adeliver_many`, else
        :meth:`deliver` in a worker thread.
        """
        if type(self).adeliver_many is not BaseAnnounce.adeliver_many:
            return _raise_outcome((await self.adeliver_many([envelope]))[0])
        import asyncio  # here, not at import: sync hosts never pay for asyncio

        return await asyncio.to_thread(self.deliver, envelope)

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Deliver several envelopes; return one outcome per envelope, in order.

        The default delivers them one by one. A batching transport overrides this and must not
        let one bad entry fail the others.
        """
        outcomes: list[DeliveryOutcome] = []
        for envelope in envelopes:
            try:
                outcomes.append(self.deliver(envelope))
            except Exception as error:  # noqa: BLE001 - each envelope's failure is its own outcome
                outcomes.append(error)
        return outcomes

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Async :meth:`deliver_many`.

        The default uses a batching ``deliver_many`` in a thread when only that is overridden,
        else awaits :meth:`adeliver` for each envelope in turn.
        """
        cls = type(self)
        if (
            cls.adeliver is BaseAnnounce.adeliver
            and cls.deliver_many is not BaseAnnounce.deliver_many
        ):
            import asyncio

            return await asyncio.to_thread(self.deliver_many, envelopes)
        outcomes: list[DeliveryOutcome] = []
        for envelope in envelopes:
            try:
                outcomes.append(await self.adeliver(envelope))
            except Exception as error:  # noqa: BLE001 - each envelope's failure is its own outcome
                outcomes.append(error)
        return outcomes

    @property
    def destination(self) -> str | None:
        """Where this announcer sends, for telemetry (``messaging.destination.name``).

        A queue, topic, stream, subject, exchange or host name: never a credential, a query
        string or a path that may hold a token. None (the default) when there is no single one.
        """
        return None

    def with_lifecycle_events(self, *types: str) -> Self:
        """Opt in to lifecycle events of the given types; returns self.

        ``"wait.answered"``, ``"wait.expired"``, ``"wait.answer_refused"``. Off by default: a consumer written for question envelopes alone would take an event for
        a question. Only announcers that implement :meth:`deliver_event` can opt in.

        Raises:
            ValueError: A type is not a lifecycle event, or this announcer delivers none.
        """
        for kind in types:
            if kind not in LIFECYCLE_TYPES:
                raise ValueError(
                    f"lifecycle event type {kind!r} is not one of {list(LIFECYCLE_TYPES)}"
                )
        if types and not delivers_events(type(self)):
            raise ValueError(
                f"announcer {self.name!r} ({type(self).__name__}) does not publish lifecycle events"
            )
        self.lifecycle_events = frozenset(types)
        return self

    def deliver_event(self, event: LifecycleEvent) -> Receipt | None:
        """Deliver one lifecycle event, raising on failure, keyed on ``event.dedupe_key``.

        Announcers that publish events override this; the default refuses.
        """
        raise NotImplementedError(f"{type(self).__name__} does not publish lifecycle events")

    async def adeliver_event(self, event: LifecycleEvent) -> Receipt | None:
        """Async :meth:`deliver_event`; the default runs it in a worker thread."""
        import asyncio

        return await asyncio.to_thread(self.deliver_event, event)

    def check_connection(self) -> bool:
        """Check cheaply that the destination is reachable (``agent-wait config check --connect``).

        Override it with one round trip that needs no write (a PING, a metadata read) and
        raise when it fails. Returns True when a check ran; the default returns False: this
        announcer has no cheap check.
        """
        return False

    def close(self) -> None:
        """Release clients and connections. Safe to call more than once."""

    async def aclose(self) -> None:
        """Async :meth:`close`."""
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def delivers_events(announcer_type: type[BaseAnnounce]) -> bool:
    """Whether announcers of this class can opt in to lifecycle events.

    They can when they implement :meth:`BaseAnnounce.deliver_event`.
    """
    return announcer_type.deliver_event is not BaseAnnounce.deliver_event


def _raise_outcome(outcome: DeliveryOutcome) -> Receipt | None:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


@dataclass(frozen=True, slots=True)
class Delivery:
    """The outcome of one envelope at one announcer.

    Attributes:
        announcer: The announcer's name.
        question_id: Which question.
        event_id: Which publish of it.
        ok: True when delivered.
        error: ``"<ExceptionType>: <message>"`` when not.
        exception: The exception itself, for hosts that want to inspect it.
        duration: Seconds the announcer took for the call that carried this envelope (the
            envelopes of one batch share it); None when nothing was sent (a question too large).
        attempts: How many times the transport was tried, when the announcer knows.
        message_id: The transport's id of the message (SQS ``MessageId``, a Redis stream id...),
            when it gives one.
        notes: What the announcer changed so that the transport takes the message (the
            :class:`Receipt`'s ``notes``); empty when it sent the envelope as it is.
    """

    announcer: str
    question_id: str
    event_id: str
    ok: bool
    error: str | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    duration: float | None = None
    attempts: int | None = None
    message_id: str | None = None
    notes: tuple[str, ...] = ()


# No slots: on 3.11 a slotted frozen dataclass raises TypeError, not AttributeError, for an
# unknown attribute set on it.
@dataclass(frozen=True)
class PublishReport:
    """What one publish did: the envelopes built and every delivery outcome. Immutable.

    Attributes:
        envelopes: One per question, in question order.
        deliveries: One per announcer and envelope.
    """

    envelopes: tuple[WaitEnvelope, ...] = ()
    deliveries: tuple[Delivery, ...] = ()

    @property
    def ok(self) -> bool:
        """True when every envelope reached every announcer, and there was one to reach.

        Envelopes with no delivery at all (published with ``announce=[]``) went nowhere: not ok.
        """
        if self.envelopes and not self.deliveries:
            return False
        return all(d.ok for d in self.deliveries)

    @property
    def failures(self) -> list[Delivery]:
        """The deliveries that failed."""
        return [d for d in self.deliveries if not d.ok]

    @property
    def question_ids(self) -> list[str]:
        """The ids of the questions published, in order."""
        return [e.question_id for e in self.envelopes]

    def for_announcer(self, name: str) -> list[Delivery]:
        """The deliveries of one announcer."""
        return [d for d in self.deliveries if d.announcer == name]

    def raise_for_failures(self) -> None:
        """Raise :class:`AnnounceFailed` if any delivery failed."""
        if not self.ok:
            from agent_wait.core._errors import AnnounceFailed

            raise AnnounceFailed(self)
