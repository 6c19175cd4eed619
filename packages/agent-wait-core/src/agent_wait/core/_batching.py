"""Building blocks for announcers that batch over an SDK client (pure stdlib, no SDK).

Transport plugins never import each other, so what several of them need lives here: size
accounting in UTF-8 bytes, chunking by entry count and bytes, the routing attributes an envelope
becomes, identifiers that fit a transport's character rules, the lifecycle of a long-lived
sync/async client pair, and :class:`ClientAnnounce`, which runs one sans-IO delivery plan on
either client.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
import string
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, suppress
from dataclasses import dataclass, field
from typing import Any, Generic, Protocol, TypeVar

from agent_wait.core._announce import BaseAnnounce, DeliveryOutcome, Receipt
from agent_wait.core._errors import ConfigError, DeliveryFailed
from agent_wait.core._models import WaitEnvelope

T = TypeVar("T")


def utf8_size(*texts: str) -> int:
    """The total size of ``texts`` in UTF-8 bytes.

    Transports limit bytes, not characters: 262,144 ``"é"`` are 512 KiB.
    """
    return sum(len(text.encode("utf-8")) for text in texts)


def chunk(
    items: Sequence[T], *, max_count: int, max_bytes: int, size: Callable[[T], int]
) -> list[list[T]]:
    """Split ``items``, in order, into consecutive batches within a count and a byte budget.

    Args:
        items: What to send.
        max_count: At most this many items per batch.
        max_bytes: At most this many bytes per batch (the sum of ``size(item)``).
        size: The size of one item in bytes, as the transport counts it.

    Returns:
        The batches; empty when ``items`` is.

    Raises:
        ValueError: One item alone is larger than ``max_bytes``; check per-item limits first.
    """
    if max_count < 1 or max_bytes < 1:
        raise ValueError(f"max_count and max_bytes must be positive, got {max_count}, {max_bytes}")
    batches: list[list[T]] = []
    current: list[T] = []
    used = 0
    for item in items:
        item_size = size(item)
        if item_size > max_bytes:
            raise ValueError(
                f"an item of {item_size} bytes exceeds the {max_bytes}-byte batch budget"
            )
        if current and (len(current) == max_count or used + item_size > max_bytes):
            batches.append(current)
            current, used = [], 0
        current.append(item)
        used += item_size
    if current:
        batches.append(current)
    return batches


ID_CHARACTERS = frozenset(string.ascii_letters + string.digits + string.punctuation)
"""Printable ASCII without space: what SNS/SQS FIFO group and deduplication ids accept."""


def fit_identifier(
    value: str, *, max_length: int = 128, allowed: frozenset[str] = ID_CHARACTERS
) -> str:
    """``value`` itself when a transport accepts it as an id, else its SHA-256 hex digest.

    The digest is deterministic, so a republished question maps to the same id, and it keeps
    distinct values distinct.

    Args:
        value: The natural id (a thread id, a dedupe key).
        max_length: The transport's length limit (the digest is cut to it if shorter than 64).
        allowed: The characters the transport accepts.
    """
    if value and len(value) <= max_length and all(c in allowed for c in value):
        return value
    return hashlib.sha256(value.encode("utf-8")).hexdigest()[:max_length]


_ATTRIBUTE_NAME = re.compile(r"^[A-Za-z0-9_.-]+$")
_RESERVED_PREFIXES = ("aws.", "amazon.")


def _aws_attribute_name_error(name: str) -> str | None:
    if not _ATTRIBUTE_NAME.match(name):
        return "only letters, digits, '_', '-' and '.' are allowed"
    if len(name) > 256:
        return f"longer than 256 characters ({len(name)})"
    if name.startswith(".") or name.endswith(".") or ".." in name:
        return "it starts or ends with '.' or has '..'"
    if name.lower().startswith(_RESERVED_PREFIXES):
        return "the 'AWS.' and 'Amazon.' prefixes are reserved"
    return None


@dataclass(frozen=True, slots=True)
class RoutingAttributes:
    """The attributes one envelope is sent with, and the tags left out.

    Attributes:
        values: Attribute name to value, in priority order.
        dropped: Tag name to the reason it was left out.
    """

    values: dict[str, str]
    dropped: dict[str, str]


@dataclass(frozen=True, slots=True)
class AttributeRules:
    """How an envelope becomes transport attributes (message attributes, headers) for routing.

    The order is deterministic: ``type`` and ``thread_id`` first, then the announcer's fixed
    attributes, then the policy's tags sorted by name. Tags that cannot be sent are dropped
    one by one (never the whole message): an empty value, an invalid name, a name already
    taken, or no room left under ``max_count``.

    Attributes:
        max_count: The transport's attribute limit.
        name_error: Why a name is invalid, or None when it is valid.
        service: The transport's name, for error messages.
    """

    max_count: int
    name_error: Callable[[str], str | None] = field(default=lambda _name: None)
    service: str = "the transport"

    def fixed(self, option: str, attributes: Mapping[str, object] | None) -> dict[str, str]:
        """Validate an announcer's fixed attributes (an option) at construction.

        Raises:
            ConfigError: An attribute is not a non-empty string, has an invalid or reserved
                name, or there are too many; the message names the option and the attribute.
        """
        if attributes is None:
            return {}
        if not isinstance(attributes, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ConfigError(f"{option}: expected a table of name = value, got {attributes!r}")
        checked: dict[str, str] = {}
        for name, value in sorted(attributes.items()):
            if name in _ENVELOPE_ATTRIBUTES:
                raise ConfigError(f"{option}: {name!r} is reserved for the envelope's own {name}")
            problem = self.name_error(name)
            if problem:
                raise ConfigError(
                    f"{option}: {name!r} is not a valid {self.service} name: {problem}"
                )
            if not isinstance(value, str) or not value:
                raise ConfigError(f"{option}: {name!r} must be a non-empty string, got {value!r}")
            checked[name] = value
        room = self.max_count - len(_ENVELOPE_ATTRIBUTES)
        if len(checked) > room:
            raise ConfigError(
                f"{option}: {len(checked)} attributes given; {self.service} allows "
                f"{self.max_count} per message and 'type' and 'thread_id' take two, so at most {room}"
            )
        return checked

    def select(
        self, envelope: WaitEnvelope, fixed: Mapping[str, str] | None = None
    ) -> RoutingAttributes:
        """The attributes of one envelope (``fixed`` as returned by :meth:`fixed`)."""
        values = {"type": envelope.type, "thread_id": envelope.thread_id, **(fixed or {})}
        dropped: dict[str, str] = {}
        for name in sorted(envelope.tags):
            value = envelope.tags[name]
            if name in values:
                dropped[name] = "its name is taken by a built-in or fixed attribute"
            elif not value:
                dropped[name] = "empty value"
            elif problem := self.name_error(name):
                dropped[name] = f"invalid name: {problem}"
            elif len(values) >= self.max_count:
                dropped[name] = f"over the {self.max_count}-attribute limit"
            else:
                values[name] = value
        return RoutingAttributes(values, dropped)


_ENVELOPE_ATTRIBUTES = ("type", "thread_id")

AWS_MESSAGE_ATTRIBUTES = AttributeRules(
    max_count=10, name_error=_aws_attribute_name_error, service="SNS/SQS message attribute"
)
"""SNS and SQS message attributes: at most 10, names of ``[A-Za-z0-9_.-]`` up to 256
characters, no leading, trailing or doubled ``.``, no ``AWS.``/``Amazon.`` prefix."""


def _unchanged(error: BaseException) -> BaseException:
    return error


class SupportsClose(Protocol):
    """A client with a ``close()`` method."""

    def close(self) -> None:
        """Release the client's connections."""
        ...


S = TypeVar("S", bound=SupportsClose)
A = TypeVar("A")


class ClientPair(Generic[S, A]):
    """A sync client and an async client, injected or built on first use and then reused.

    Injected clients are used as given and never closed: their owner closes them. Clients built
    here are closed by :meth:`close` / :meth:`aclose`. An async client belongs to the event loop
    that opened it (its connection pool does), so a new running loop, such as a host calling
    ``asyncio.run`` per message, opens a new one.

    Args:
        build_sync: Builds the sync client (called at most once, under a lock).
        open_async: Returns the async context manager of a new async client; None runs the
            sync client in a worker thread on the async path. So does injecting only a sync
            client: it carries the caller's configuration, which a built one would not.
        sync_client: An injected sync client.
        async_client: An injected async client.
        classify: Maps an exception the SDK raised to the error to report, typically a
            :class:`~agent_wait.core.DeliveryFailed` saying whether a retry may succeed; other
            exceptions are returned unchanged.
    """

    def __init__(
        self,
        build_sync: Callable[[], S],
        open_async: Callable[[], AbstractAsyncContextManager[A]] | None,
        *,
        sync_client: S | None = None,
        async_client: A | None = None,
        classify: Callable[[BaseException], BaseException] | None = None,
    ) -> None:
        self.classify: Callable[[BaseException], BaseException] = classify or _unchanged
        self._build_sync = build_sync
        self._open_async = None if sync_client is not None and async_client is None else open_async
        self._sync = sync_client
        self._owns_sync = sync_client is None
        self._injected_async = async_client
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Task[A] | None = None
        self._stack: AsyncExitStack | None = None

    def sync(self) -> S:
        """The sync client (built on first use)."""
        with self._lock:
            if self._sync is None:
                self._sync = self._build_sync()
            return self._sync

    async def async_client(self) -> A | None:
        """The async client for the running loop, or None to run the sync client in a thread."""
        if self._injected_async is not None:
            return self._injected_async
        if self._open_async is None:
            return None
        loop = asyncio.get_running_loop()
        if self._loop is not loop:
            # A client opened on another loop cannot be used or closed from this one; that loop
            # has finished (asyncio.run per message), so its client is abandoned, not shared.
            self._loop, self._opening, self._stack = loop, None, None
        opening = self._opening
        if opening is None or (opening.done() and (opening.cancelled() or opening.exception())):
            opening = self._opening = loop.create_task(self._open())
        return await asyncio.shield(opening)

    async def _open(self) -> A:
        assert self._open_async is not None
        stack = AsyncExitStack()
        client = await stack.enter_async_context(self._open_async())
        self._stack = stack
        return client

    def close(self) -> None:
        """Close the sync client if it was built here. Safe to call more than once."""
        with self._lock:
            client, self._sync = (self._sync, None) if self._owns_sync else (None, self._sync)
        if client is not None:
            client.close()

    async def aclose(self) -> None:
        """Close the async client opened on the running loop (if built here), then :meth:`close`."""
        opening, loop = self._opening, self._loop
        if opening is not None and loop is asyncio.get_running_loop():
            with suppress(Exception):  # a client that failed to open has nothing to close
                await asyncio.shield(opening)
            stack = self._stack
            self._opening, self._stack, self._loop = None, None, None
            if stack is not None:
                await stack.aclose()
        self.close()


RETRYABLE_CODES = frozenset(
    {
        "InternalError",
        "InternalFailure",
        "InternalServerError",
        "KMSThrottlingException",
        "ProvisionedThroughputExceededException",
        "RequestLimitExceeded",
        "RequestThrottled",
        "RequestThrottledException",
        "ServiceUnavailable",
        "SlowDown",
        "ThrottledException",
        "Throttling",
        "ThrottlingException",
        "TooManyRequestsException",
        "TransactionInProgressException",
    }
)
"""AWS error codes of throttling and server faults: the same request may succeed later."""


class BatchEntryFailed(DeliveryFailed):
    """A transport refused one entry of a batch request; the other entries are unaffected.

    Attributes:
        service: The transport ("SQS", "SNS", "EventBridge").
        code: The transport's error code for the entry.
        detail: The transport's error message for the entry.
        sender_fault: True when the entry itself is at fault, None when not reported.
        retryable: True when the service says it was not the entry's fault (``SenderFault`` false)
            or the code is a throttling or server error.
    """

    code: str

    def __init__(
        self, service: str, code: str, detail: str, sender_fault: bool | None = None
    ) -> None:
        retryable = code in RETRYABLE_CODES if sender_fault is None else not sender_fault
        super().__init__(
            f"{service} refused the entry: {code}: {detail}", retryable=retryable, code=code
        )
        self.service = service
        self.detail = detail
        self.sender_fault = sender_fault


Exchange = Generator[tuple[str, dict[str, Any]], Any, None]
"""The SDK calls that send some envelopes, without doing I/O: yields ``(method, kwargs)`` and
receives each call's result, or the exception it raised."""


class _NotDelivered(RuntimeError):
    """An envelope the plan neither rejected nor sent: a bug in the announcer, still reported."""


class ClientAnnounce(BaseAnnounce):
    """Base of announcers that deliver through an SDK client with a sync and an async flavour.

    A subclass sets ``self.clients`` (a :class:`ClientPair`) and writes :meth:`plan`. The same
    plan runs on the sync client (:meth:`deliver`, :meth:`deliver_many`) and on the async one
    (:meth:`adeliver`, :meth:`adeliver_many`), so the two paths cannot drift apart. Exchanges run
    one after the other, which keeps FIFO transports in question order, unless the subclass
    sets ``max_concurrency`` above 1: then the async path keeps up to that many exchanges in
    flight, for transports whose requests are independent. When only a sync client was
    injected, the async path runs the sync one in a worker thread.

    Attributes:
        clients: The announcer's clients.
        max_concurrency: Exchanges in flight at once on the async path (default 1: in order).
    """

    clients: ClientPair[Any, Any]
    max_concurrency: int = 1

    def plan(
        self, envelopes: Sequence[WaitEnvelope], outcomes: list[DeliveryOutcome]
    ) -> list[Exchange]:
        """Plan the delivery of ``envelopes``.

        Args:
            envelopes: What to deliver.
            outcomes: One slot per envelope. Put the error of each envelope that cannot be sent
                in its slot now; each returned exchange sets the slots of the envelopes it
                carries (None when delivered) as the responses arrive.

        Returns:
            The exchanges that send the other envelopes, in order.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement plan()")

    def deliver(self, envelope: WaitEnvelope) -> Receipt | None:
        """Deliver one envelope, raising its error."""
        return _raise(self.deliver_many([envelope])[0])

    async def adeliver(self, envelope: WaitEnvelope) -> Receipt | None:
        """Deliver one envelope through the async client, raising its error."""
        return _raise((await self.adeliver_many([envelope]))[0])

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Deliver several envelopes in as few requests as the transport allows."""
        outcomes: list[DeliveryOutcome] = [_PENDING] * len(envelopes)
        exchanges = self.plan(envelopes, outcomes)
        crashes: list[BaseException | None] = []
        if exchanges:
            client = self.clients.sync()
            crashes = [_run(exchange, client) for exchange in exchanges]
        return _settled(outcomes, crashes, self.clients.classify)

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Async :meth:`deliver_many`: the async client, never a blocking call on the loop."""
        client = await self.clients.async_client()
        if client is None:
            return await asyncio.to_thread(self.deliver_many, envelopes)
        outcomes: list[DeliveryOutcome] = [_PENDING] * len(envelopes)
        exchanges = self.plan(envelopes, outcomes)
        if self.max_concurrency > 1 and len(exchanges) > 1:
            gate = asyncio.Semaphore(self.max_concurrency)

            async def run(exchange: Exchange) -> BaseException | None:
                async with gate:
                    return await _arun(exchange, client)

            crashes = list(await asyncio.gather(*(run(e) for e in exchanges)))
        else:
            crashes = [await _arun(exchange, client) for exchange in exchanges]
        return _settled(outcomes, crashes, self.clients.classify)

    def close(self) -> None:
        """Close the clients this announcer built (injected ones stay open)."""
        self.clients.close()

    async def aclose(self) -> None:
        """Close the async client this announcer opened on the running loop, then :meth:`close`."""
        await self.clients.aclose()


_PENDING = _NotDelivered("the announcer neither sent nor rejected this envelope")


def _raise(outcome: DeliveryOutcome) -> Receipt | None:
    if isinstance(outcome, BaseException):
        raise outcome
    return outcome


def _settled(
    outcomes: list[DeliveryOutcome],
    crashes: list[BaseException | None],
    classify: Callable[[BaseException], BaseException],
) -> list[DeliveryOutcome]:
    # Each exchange sets all of its slots unless it crashed, so slots still pending belong to
    # a crashed exchange: they get its error rather than a silent success. The exchanges see
    # the SDK's own exceptions (to recognise a duplicate, say); the report gets them classified.
    crash = next((c for c in crashes if c is not None), _PENDING)
    settled = (crash if outcome is _PENDING else outcome for outcome in outcomes)
    return [classify(o) if isinstance(o, Exception) else o for o in settled]


def _run(exchange: Exchange, client: Any) -> BaseException | None:
    try:
        method, kwargs = next(exchange)
        while True:
            try:
                result: object = getattr(client, method)(**kwargs)
            except Exception as error:  # noqa: BLE001 - the exchange turns it into outcomes
                result = error
            method, kwargs = exchange.send(result)
    except StopIteration:
        return None
    except Exception as error:  # noqa: BLE001 - a broken exchange fails only its own envelopes
        return error


async def _arun(exchange: Exchange, client: Any) -> BaseException | None:
    try:
        method, kwargs = next(exchange)
        while True:
            try:
                result: object = await getattr(client, method)(**kwargs)
            except Exception as error:  # noqa: BLE001 - the exchange turns it into outcomes
                result = error
            method, kwargs = exchange.send(result)
    except StopIteration:
        return None
    except Exception as error:  # noqa: BLE001 - a broken exchange fails only its own envelopes
        return error
