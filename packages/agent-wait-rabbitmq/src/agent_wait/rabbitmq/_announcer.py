"""RabbitMqAnnounce: one persistent, confirmed AMQP message per question (pika sync, aio-pika async)."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Sequence
from typing import Any, Self

try:
    import aio_pika
    import aio_pika.abc
    import aio_pika.exceptions
    import pika
    import pika.adapters.blocking_connection
    import pika.exceptions
except ImportError as error:  # pragma: no cover - the distribution depends on both
    raise ImportError(
        "RabbitMqAnnounce needs pika and aio-pika: pip install agent-wait-rabbitmq"
    ) from error

from agent_wait.core import (
    BaseAnnounce,
    BatchEntryFailed,
    DeliveryFailed,
    DeliveryOutcome,
    WaitEnvelope,
)
from agent_wait.core.options import redact
from agent_wait.core.transport import ClientPair, transport_headers
from agent_wait.rabbitmq._options import (
    DEFAULT_EXCHANGE,
    DEFAULT_ROUTING_KEY,
    DEFAULT_URL,
    RabbitMqOptions,
)
from agent_wait.rabbitmq._routing import RoutingKeyTemplate

CONTENT_TYPE = "application/json"
APP_ID = "agent-wait"

BlockingChannel = pika.adapters.blocking_connection.BlockingChannel


class RabbitMqAnnounce(BaseAnnounce):
    """Publishes each envelope to an exchange with publisher confirms.

    The body is the contract JSON; ``message_id`` is the envelope's dedupe key, ``type`` is
    ``wait.created``, ``content_type`` is ``application/json``, ``app_id`` is ``agent-wait``,
    delivery is persistent, and the tags are the message headers (name: value), so a headers
    exchange can route on them. A message counts as delivered once the broker confirms it; a
    nack, and with ``mandatory`` a message no queue is bound for, is a failure.

    RabbitMQ does not deduplicate: a republish is a second message with the same
    ``message_id``, and consumers deduplicate on it.

    The sync path uses pika (one blocking connection, serialised by a lock); the async path uses
    aio-pika (one connection per running event loop, publishes confirmed concurrently).

    Args:
        url: ``amqp://user:password@host:5672/vhost`` (or ``amqps://``).
        exchange: The exchange; ``""`` is the default exchange, where the routing key is a
            queue name.
        routing_key: Routing-key template, e.g. ``questions.{tags[approver_group]}``: see
            :class:`~agent_wait.rabbitmq._routing.RoutingKeyTemplate`.
        declare: Declare the exchange (durable, of ``exchange_type``) instead of checking
            passively that it exists.
        exchange_type: ``topic`` (default), ``direct``, ``fanout`` or ``headers``; used with
            ``declare``.
        mandatory: Report a message that no queue is bound for as a failure (the broker returns
            it); with False the broker drops it silently.
        timeout: Seconds to wait to connect and for each confirm.

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "rabbitmq"
    options_model = RabbitMqOptions

    def __init__(
        self,
        url: str = DEFAULT_URL,
        exchange: str = DEFAULT_EXCHANGE,
        routing_key: str = DEFAULT_ROUTING_KEY,
        declare: bool = False,
        exchange_type: str = "topic",
        mandatory: bool = True,
        timeout: float = 10.0,
    ) -> None:
        options = RabbitMqOptions.parse(
            self.name,
            {
                "url": url,
                "exchange": exchange,
                "routing_key": routing_key,
                "declare": declare,
                "exchange_type": exchange_type,
                "mandatory": mandatory,
                "timeout": timeout,
            },
        )
        try:
            self._parameters = pika.URLParameters(options.url)
        except (ValueError, TypeError) as error:
            raise RabbitMqOptions.option_error(
                self.name, "url", f"not usable: {redact(str(error))}", options.url
            ) from error
        self.routing_key = RoutingKeyTemplate(options.routing_key)
        self.url = options.url
        self.exchange = options.exchange
        self.declare = options.declare
        self.exchange_type = options.exchange_type
        self.mandatory = options.mandatory
        self.timeout = options.timeout
        # Fail fast on an unreachable broker and never wait forever on a blocked connection.
        self._parameters.connection_attempts = 1
        self._parameters.socket_timeout = self.timeout
        self._parameters.stack_timeout = self.timeout
        self._parameters.blocked_connection_timeout = self.timeout
        self._parameters.client_properties = {"connection_name": APP_ID}
        # Opened on first use and reused; aio-pika connections belong to the loop they were
        # opened on, so the async path has one per running loop.
        self._clients = ClientPair[_SyncConnection, _AsyncConnection](
            lambda: _SyncConnection(self, self._parameters), lambda: _AsyncConnection(self)
        )

    # -- sync (pika) ----------------------------------------------------------------------

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Publish every envelope on one channel; one outcome per envelope, in order.

        An envelope is delivered once the broker confirms it. A failed one's outcome is
        :class:`~agent_wait.core.BatchEntryFailed` (the broker returned the message as
        unroutable, code ``NO_ROUTE``, with ``mandatory``; or nacked it, ``NACK``), a
        ``LookupError`` (the exchange does not exist, or the routing-key template needs a tag
        the envelope lacks) or :class:`~agent_wait.core.DeliveryFailed` (the broker is
        unreachable, ``retryable``, or closed the channel). ``deliver`` is a batch of one.
        """
        outcomes: list[DeliveryOutcome] = []
        sync = self._clients.sync()
        with sync.lock:
            for index, envelope in enumerate(envelopes):
                try:
                    channel = sync.channel()
                except Exception as error:  # noqa: BLE001 - no channel: the rest fail alike
                    outcomes.extend(
                        [_explain(error, self.exchange, None)] * (len(envelopes) - index)
                    )
                    break
                try:
                    self._publish_sync(channel, envelope)
                except Exception as error:  # noqa: BLE001 - each envelope's failure is its own outcome
                    outcomes.append(_explain(error, self.exchange, envelope))
                else:
                    outcomes.append(None)
        return outcomes

    def _publish_sync(self, channel: BlockingChannel, envelope: WaitEnvelope) -> None:
        key = self.routing_key.render(envelope)
        properties = pika.BasicProperties(
            content_type=CONTENT_TYPE,
            delivery_mode=pika.DeliveryMode.Persistent,
            message_id=envelope.dedupe_key,
            type=envelope.type,
            app_id=APP_ID,
            headers=_headers(envelope),
        )
        try:
            channel.basic_publish(
                self.exchange, key, envelope.to_json(), properties, self.mandatory
            )
        except pika.exceptions.UnroutableError as error:
            raise _unroutable(self.exchange, key) from error

    @property
    def destination(self) -> str:
        """The exchange; on the default exchange (``""``), the routing key template (a queue)."""
        return self.exchange or self.routing_key.template

    def check_connection(self) -> bool:
        """Connect, open a channel and check passively that the exchange exists.

        For ``agent-wait config check --connect``; declares and publishes nothing.
        """
        connection = pika.BlockingConnection(self._parameters)
        try:
            channel = connection.channel()
            if self.exchange and not self.declare:
                channel.exchange_declare(self.exchange, passive=True)
        finally:
            with contextlib.suppress(pika.exceptions.AMQPError):
                connection.close()
        return True

    def close(self) -> None:
        """Close the sync connection (a later delivery reconnects)."""
        self._clients.close()

    # -- async (aio-pika) -----------------------------------------------------------------

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Publish every envelope concurrently, confirms awaited together; one outcome each."""
        if not envelopes:
            return []
        try:
            conn = await self._clients.async_client()
            assert conn is not None  # built here, never None
            exchange = await conn.exchange()
        except Exception as error:  # noqa: BLE001 - no channel: every envelope fails alike
            return [_explain(error, self.exchange, None)] * len(envelopes)
        results = await asyncio.gather(
            *(self._apublish(exchange, e) for e in envelopes), return_exceptions=True
        )
        outcomes: list[DeliveryOutcome] = []
        for envelope, result in zip(envelopes, results, strict=True):
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # cancellation is not a delivery outcome
            outcomes.append(None if result is None else _explain(result, self.exchange, envelope))
        return outcomes

    async def _apublish(
        self, exchange: aio_pika.abc.AbstractExchange, envelope: WaitEnvelope
    ) -> None:
        key = self.routing_key.render(envelope)
        message = aio_pika.Message(
            envelope.to_json(),
            content_type=CONTENT_TYPE,
            delivery_mode=aio_pika.DeliveryMode.PERSISTENT,
            message_id=envelope.dedupe_key,
            type=envelope.type,
            app_id=APP_ID,
            headers=_headers(envelope),
        )
        try:
            await exchange.publish(message, key, mandatory=self.mandatory, timeout=self.timeout)
        except aio_pika.exceptions.PublishError as error:
            raise _unroutable(self.exchange, key) from error

    async def aclose(self) -> None:
        """Close the running loop's aio-pika connection, then the sync one."""
        await self._clients.aclose()


class _SyncConnection:
    """The pika connection and confirm channel of the sync path; use it under ``lock``."""

    def __init__(self, owner: RabbitMqAnnounce, parameters: pika.URLParameters) -> None:
        self._owner = owner
        self._parameters = parameters
        self.lock = threading.Lock()  # a BlockingConnection is not thread-safe
        self._connection: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None

    def channel(self) -> BlockingChannel:
        """The confirm channel, (re)connecting and checking the exchange as needed."""
        owner = self._owner
        connection = self._connection
        if connection is not None:
            try:
                # Services heartbeats and notices a connection the broker closed while idle.
                connection.process_data_events(0)
            except pika.exceptions.AMQPError:
                self._drop()
                connection = None
        if connection is None or not connection.is_open:
            self._drop()
            connection = self._connection = pika.BlockingConnection(self._parameters)
        if self._channel is None or not self._channel.is_open:  # pyright: ignore[reportUnknownMemberType]
            channel = connection.channel()
            channel.confirm_delivery()
            if owner.declare:
                channel.exchange_declare(owner.exchange, owner.exchange_type, durable=True)
            elif owner.exchange:
                channel.exchange_declare(owner.exchange, passive=True)
            self._channel = channel
        return self._channel

    def _drop(self) -> None:
        connection, self._connection, self._channel = self._connection, None, None
        if connection is not None and connection.is_open:
            # An already broken connection has nothing left to release.
            with contextlib.suppress(pika.exceptions.AMQPError):
                connection.close()

    def close(self) -> None:
        """Close the connection."""
        with self.lock:
            self._drop()


class _AsyncConnection:
    """An aio-pika connection, confirm channel and exchange, used on one event loop only."""

    def __init__(self, owner: RabbitMqAnnounce) -> None:
        self._owner = owner
        self.connection: aio_pika.abc.AbstractConnection | None = None
        self.channel: aio_pika.abc.AbstractChannel | None = None
        self._exchange: aio_pika.abc.AbstractExchange | None = None
        self.lock = asyncio.Lock()  # binds to the loop of its first use

    async def exchange(self) -> aio_pika.abc.AbstractExchange:
        """The exchange on a confirm channel, (re)connecting as needed."""
        owner = self._owner
        async with self.lock:
            if self.connection is None or self.connection.is_closed:
                self.connection = self.channel = self._exchange = None
                self.connection = await aio_pika.connect(
                    owner.url, timeout=owner.timeout, client_properties={"connection_name": APP_ID}
                )
            if self.channel is None or self.channel.is_closed or self._exchange is None:
                channel = await self.connection.channel(
                    publisher_confirms=True, on_return_raises=True
                )
                if owner.declare:
                    exchange = await channel.declare_exchange(
                        owner.exchange, owner.exchange_type, durable=True, timeout=owner.timeout
                    )
                elif owner.exchange:
                    exchange = await channel.get_exchange(owner.exchange, ensure=True)
                else:
                    exchange = channel.default_exchange
                self.channel, self._exchange = channel, exchange
            return self._exchange

    async def close(self) -> None:
        """Close the connection."""
        connection, self.connection, self.channel, self._exchange = (
            self.connection,
            None,
            None,
            None,
        )
        if connection is not None and not connection.is_closed:
            await connection.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


def _explain(error: Exception, exchange: str, envelope: WaitEnvelope | None) -> Exception:
    """Turn library errors into ones that say what to fix; others pass through unchanged."""
    text = str(error)
    clearer: Exception | None = None
    if "NOT_FOUND - no exchange" in text:
        clearer = LookupError(
            f"exchange {exchange!r} does not exist on the broker; declare it or set declare=true ({text})"
        )
    elif isinstance(error, pika.exceptions.NackError | aio_pika.exceptions.DeliveryError):
        # A nack: the broker could not take the message (a full queue with reject-publish, an
        # internal error); a later publish may succeed.
        which = f"question {envelope.question_id!r}" if envelope else "the message"
        clearer = BatchEntryFailed(
            "RabbitMQ", "NACK", f"the broker nacked {which} ({text})", sender_fault=False
        )
    elif isinstance(
        error, pika.exceptions.AMQPConnectionError | aio_pika.exceptions.AMQPConnectionError
    ):
        clearer = DeliveryFailed(
            f"cannot reach RabbitMQ: {error!r}", retryable=True, code=type(error).__name__
        )
    elif isinstance(error, pika.exceptions.AMQPError | aio_pika.exceptions.AMQPError):
        # A channel the broker closed (access refused, a precondition failed): not by itself.
        clearer = DeliveryFailed(
            f"RabbitMQ: {type(error).__name__}: {text}", retryable=False, code=type(error).__name__
        )
    if clearer is None:
        return error
    clearer.__cause__ = error
    return clearer


def _unroutable(exchange: str, key: str) -> BatchEntryFailed:
    return BatchEntryFailed(
        "RabbitMQ",
        "NO_ROUTE",
        f"exchange {exchange!r} has no queue bound for routing key {key!r} (mandatory=true; "
        "bind a queue or set mandatory=false to let the broker drop it)",
        sender_fault=True,
    )


def _headers(envelope: WaitEnvelope) -> dict[str, Any]:
    # The tags route (a headers exchange), so a plugin's header (a trace context) never
    # replaces one.
    return {**transport_headers(envelope), **envelope.tags}
