"""RabbitMqEntry: start messages and answers through quorum queues, each with one active consumer."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import math
import random
import threading
import time
import uuid
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from functools import partial
from typing import Any, TypeVar

try:
    import pika
    import pika.adapters.blocking_connection
    import pika.exceptions
    import pika.spec
except ImportError as error:  # pragma: no cover - the distribution depends on pika
    raise ImportError("RabbitMqEntry needs pika: pip install agent-wait-rabbitmq") from error

from agent_wait.core import (
    DeadLetter,
    DeliveryFailed,
    EntryPoint,
    Received,
    format_utc,
    log_safe,
    parse_message,
)
from agent_wait.core.options import redact
from agent_wait.core.transport import (
    Poison,
    check_body_size,
    dead_letter,
    read_message,
    transport_headers,
)
from agent_wait.rabbitmq._options import DEFAULT_QUEUE, DEFAULT_URL, RabbitMqEntryOptions

logger = logging.getLogger("agent_wait.rabbitmq.entry")

CONTENT_TYPE = "application/json"
APP_ID = "agent-wait"
DEAD_LETTER_TYPE = "agent-wait.dead-letter"
_NACK_PAUSE = 0.05  # seconds before a nacked message is published again, doubling each time
_SLICE = 0.05  # seconds a receiver waits on the connection before it looks at its held ones
_BALANCE_EVERY = 1.0  # seconds between a sharded host's looks at how many hosts share the shards


def _nothing() -> None:
    """A callback that only ends a receiver's wait on the connection."""


BlockingChannel = pika.adapters.blocking_connection.BlockingChannel
T = TypeVar("T")


@dataclass
class _Held:
    """A delivery this host holds unacknowledged: handed out, or waiting for its turn."""

    queue: str
    """The queue (shard) it came from: its tag is one of that queue's channel."""
    tag: int
    id: str
    thread_id: str
    body: dict[str, Any]
    attempts: int
    receipt: str | None = None
    leased_until: float = 0.0
    available_at: float = 0.0
    error: str | None = None
    poison: str | None = None
    """Why its body cannot be handled (then never handed out); it is kept as ``raw``."""
    raw: bytes = b""


class RabbitMqEntry(EntryPoint):
    """An entry point on RabbitMQ: quorum queues, each with a single active consumer.

    ``send`` publishes the message (persistent, with publisher confirms) to the queue. A host's
    first ``receive`` subscribes with manual acknowledgement and a ``prefetch`` window. The
    queue has ``x-single-active-consumer``: the broker delivers to one host at a time, in queue
    order, and to the next subscribed host when that one's connection closes (its unacknowledged
    messages are requeued, with ``x-delivery-count`` one higher). The active host hands out only
    the oldest message of each thread it holds, so a thread's messages are handled one at a
    time, in order, while different threads are handled in parallel.

    Leases are kept by the host: a message handed out and not settled within
    ``visibility_timeout`` seconds (or :meth:`extend`-ed) is handed out again with ``attempt``
    one higher; :meth:`fail` hands it out again after ``retry_delay``, :meth:`release` at once
    (the message stays with this host, ahead of its thread's later ones). After ``max_attempts``
    the message is published to the dead-letter exchange ``<queue>.dead`` (into the queue
    ``<queue>.dead``), logged at ERROR, then acknowledged. The queue's ``x-delivery-limit`` (also
    ``max_attempts``) dead-letters to the same exchange a message whose hosts keep crashing.

    With ``shards`` above 1, more hosts add throughput: ``send`` puts a thread's messages in the
    queue ``<queue>.<n>``, ``n`` = CRC-32 of the thread id modulo ``shards``, so a thread stays in
    one shard. Each shard has one consumer at a time: the host whose connection holds the
    exclusive queue ``<queue>.<n>.owner``, which the broker deletes when that connection
    closes. Every host is counted
    in ``<queue>.hosts`` (a queue nobody publishes to: its consumer count is the number of
    hosts) and, once a second while it receives, takes free shards up to its share
    (``shards`` / hosts, rounded up) and gives back shards over it. A shard is given back only
    when none of its messages is in hand: closing its channel returns the rest to the front of
    the queue, in order, with ``x-delivery-count`` one higher. A host that stops or dies frees
    its shards; the others take them within a second or so.

    Args:
        url: ``amqp://user:password@host:5672/vhost`` (or ``amqps://``).
        queue: The queue; ``<queue>.dead`` is the dead-letter exchange and queue.
        shards: Queues a thread's messages are spread over; 1 is the single queue ``queue``.
            Every host and sender of one deployment uses the same number.
        declare: Declare the queue, the exchange and the dead-letter queue when missing.
        prefetch: Unacknowledged messages the broker sends this host ahead.
        visibility_timeout: Seconds a received message stays leased.
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again.
        timeout: Seconds to wait to connect and for each confirm.

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "rabbitmq"
    options_model = RabbitMqEntryOptions

    def __init__(
        self,
        url: str = DEFAULT_URL,
        queue: str = DEFAULT_QUEUE,
        shards: int = 1,
        declare: bool = True,
        prefetch: int = 100,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        timeout: float = 5.0,
    ) -> None:
        options = RabbitMqEntryOptions.parse(
            self.name,
            {
                "url": url,
                "queue": queue,
                "shards": shards,
                "declare": declare,
                "prefetch": prefetch,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "timeout": timeout,
            },
        )
        self.url = options.url
        self.queue = options.queue
        self.dead = f"{options.queue}.dead"
        self.shards = options.shards
        self.hosts = f"{options.queue}.hosts"
        self._queues = (
            [options.queue]
            if options.shards == 1
            else [f"{options.queue}.{n}" for n in range(options.shards)]
        )
        self.declare = options.declare
        self.prefetch = options.prefetch
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self.timeout = options.timeout
        self._lock = threading.RLock()  # a BlockingConnection is not thread-safe
        self._connection: pika.BlockingConnection | None = None
        self._publisher: BlockingChannel | None = None
        self._consumers: dict[str, BlockingChannel] = {}  # queue -> the channel consuming it
        self._giving_back: set[str] = set()  # shards over this host's share
        self._roll_call: BlockingChannel | None = None
        self._balanced_at = -math.inf
        # Where this host starts looking for free shards: hosts starting together spread out.
        self._first_look = random.randrange(options.shards)
        self._held: dict[str, _Held] = {}  # in delivery order
        self._awaiting: pika.BlockingConnection | None = None  # a receiver waits on it

    # -- connection --

    def _connect(self) -> pika.BlockingConnection:
        if self._connection is not None and self._connection.is_open:
            return self._connection
        self._drop()
        parameters = pika.URLParameters(self.url)
        parameters.socket_timeout = self.timeout
        parameters.blocked_connection_timeout = self.timeout
        parameters.client_properties = {"connection_name": f"{APP_ID}-entry"}
        try:
            connection = pika.BlockingConnection(parameters)
        # pika lets a ValueError out when the broker closes the socket between the TCP connect
        # and the AMQP handshake (a restart, a proxy): an unreachable broker like any other.
        except (pika.exceptions.AMQPError, OSError, ValueError) as error:
            raise ConnectionError(
                f"cannot reach RabbitMQ at {redact(self.url)}: {type(error).__name__}"
            ) from None
        self._connection = connection
        if self.declare:
            channel = connection.channel()
            channel.exchange_declare(self.dead, "fanout", durable=True)
            channel.queue_declare(self.dead, durable=True)
            channel.queue_bind(self.dead, self.dead)
            arguments: dict[str, Any] = {
                "x-queue-type": "quorum",
                "x-delivery-limit": self.max_attempts,
                "x-dead-letter-exchange": self.dead,
            }
            if self.shards == 1:
                arguments["x-single-active-consumer"] = True
            else:
                channel.queue_declare(self.hosts, durable=True)
            for name in self._queues:
                channel.queue_declare(name, durable=True, arguments=arguments)
            channel.close()  # pyright: ignore[reportUnknownMemberType]
        return connection

    def _publishing(self) -> BlockingChannel:
        if self._publisher is None or not self._publisher.is_open:  # pyright: ignore[reportUnknownMemberType]
            self._publisher = self._connect().channel()
            self._publisher.confirm_delivery()
        return self._publisher

    def route(self, thread_id: str) -> str:
        """The queue a thread's messages go to (the same in every process)."""
        if self.shards == 1:
            return self.queue
        return self._queues[zlib.crc32(thread_id.encode()) % self.shards]

    def consuming(self) -> list[str]:
        """The queues this host consumes now (its shards), sorted; empty before its first receive."""
        with self._lock:
            return sorted(self._consumers)

    def _consuming(self) -> None:
        """Subscribe to this host's queues: the single queue, or its share of the shards."""
        connection = self._connect()
        for name, channel in list(self._consumers.items()):
            if not channel.is_open:  # pyright: ignore[reportUnknownMemberType]
                self._forget(name)
        if self.shards == 1:
            if not self._consumers:
                self._subscribe(connection, self.queue)
        elif time.monotonic() - self._balanced_at >= _BALANCE_EVERY:
            self._balance(connection)

    def _subscribe(self, connection: pika.BlockingConnection, name: str) -> None:
        """Consume ``name`` on a channel of its own."""
        channel = connection.channel()
        channel.basic_qos(prefetch_count=self.prefetch)
        channel.basic_consume(name, partial(self._on_message, name), auto_ack=False)
        self._consumers[name] = channel

    def _claim(self, connection: pika.BlockingConnection, name: str) -> bool:
        """Take the shard ``name`` if no host holds it: False if one does.

        A shard is held by the connection that declared its exclusive queue ``<shard>.owner``
        (a quorum queue ignores an exclusive consumer): the broker refuses it to any other
        connection and deletes it when its connection closes, a killed host's included.
        """
        probe = connection.channel()
        try:
            probe.queue_declare(f"{name}.owner", exclusive=True)
        except pika.exceptions.ChannelClosedByBroker:
            return False  # RESOURCE_LOCKED: another host's
        probe.close()  # pyright: ignore[reportUnknownMemberType]
        self._subscribe(connection, name)
        return True

    def _forget(self, name: str) -> None:
        """Stop consuming ``name``: the broker requeues what its channel held, in order."""
        channel = self._consumers.pop(name)
        self._giving_back.discard(name)
        for held in [held for held in self._held.values() if held.queue == name]:
            del self._held[held.id]
        if channel.is_open:  # pyright: ignore[reportUnknownMemberType]
            channel.close()  # pyright: ignore[reportUnknownMemberType]
        if self.shards > 1 and self._roll_call is not None:
            # Only now, with its messages back in the shard: the next host starts from them.
            self._roll_call.queue_delete(f"{name}.owner")

    def _balance(self, connection: pika.BlockingConnection) -> None:
        """Take free shards up to this host's share; give back those over it, once idle."""
        self._balanced_at = time.monotonic()
        if self._roll_call is None or not self._roll_call.is_open:  # pyright: ignore[reportUnknownMemberType]
            roll_call = connection.channel()
            roll_call.basic_consume(self.hosts, _never_published)
            self._roll_call = roll_call
        hosts = self._consumers_of(self.hosts)
        share = math.ceil(self.shards / max(hosts, 1))
        kept = [name for name in self._consumers if name not in self._giving_back]
        self._giving_back.update(kept[share:])
        kept = kept[:share]
        for name in list(self._giving_back):
            # Only when none of its messages is in hand: a thread's next message must not
            # reach another host while this one still works on the one before.
            if not any(h.queue == name and h.receipt is not None for h in self._held.values()):
                self._forget(name)
        for step in range(self.shards):
            if len(kept) >= share:
                break
            name = self._queues[(self._first_look + step) % self.shards]
            if name in self._consumers or self._consumers_of(name):
                continue
            if self._claim(connection, name):
                kept.append(name)

    def _consumers_of(self, name: str) -> int:
        assert self._roll_call is not None
        declared = self._roll_call.queue_declare(name, passive=True).method
        return int(declared.consumer_count)  # pyright: ignore[reportAttributeAccessIssue]

    def _on_message(
        self,
        queue: str,
        channel: BlockingChannel,
        method: pika.spec.Basic.Deliver,
        properties: pika.spec.BasicProperties,
        body: bytes,
    ) -> None:
        headers: Mapping[str, Any] = properties.headers or {}
        read = read_message(body)
        # Deliveries before this one that ended without an ack (a host's connection closed).
        returned = int(headers.get("x-delivery-count", 0))
        poison = isinstance(read, Poison)
        held = _Held(
            queue=queue,
            tag=method.delivery_tag,  # pyright: ignore[reportArgumentType]
            id=properties.message_id or str(method.delivery_tag),
            thread_id=read.thread_id if poison else str(read["thread_id"]),
            body={} if poison else read,
            attempts=returned,
            poison=read.error if poison else None,
            raw=body if poison else b"",
        )
        self._held[held.id] = held

    def _locked(self, action: Callable[[], T]) -> T:
        awaiting = self._awaiting
        if awaiting is not None:
            # A receiver waits on the connection holding the lock: a callback ends its wait
            # (the one thread-safe call of a BlockingConnection), so settling is not held up.
            with contextlib.suppress(pika.exceptions.ConnectionWrongStateError):
                awaiting.add_callback_threadsafe(_nothing)  # pyright: ignore[reportUnknownMemberType]
        with self._lock:
            try:
                return action()
            except (
                pika.exceptions.AMQPConnectionError,
                pika.exceptions.ChannelWrongStateError,
            ) as error:
                # The broker requeues what this connection held: it is handed out again, and
                # settling those deliveries now reports their lease lost.
                self._drop()
                raise ConnectionError(
                    f"RabbitMQ at {redact(self.url)}: {type(error).__name__}: {error}"
                ) from error

    # -- the consumer side --

    def send(self, message: Mapping[str, Any]) -> None:
        """Publish the message to the queue and wait for the broker's confirm.

        The plugins' headers (a trace context) go in its AMQP headers. A message the broker
        nacks is published again until ``timeout`` seconds have passed.

        Raises:
            DeliveryFailed: the broker kept nacking it (``retryable``, code ``NACK``).
            ConnectionError: the broker cannot be reached.
        """
        headers = dict(transport_headers(parse_message(message)))
        body = dict(message)
        data = check_body_size(_encode(body))
        queue = self.route(str(message["thread_id"]))
        self._locked(lambda: self._publish(queue, data, str(uuid.uuid4()), headers=headers))

    def _publish(
        self,
        routing_key: str,
        body: bytes,
        message_id: str,
        kind: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        properties = pika.BasicProperties(
            content_type=CONTENT_TYPE,
            delivery_mode=pika.DeliveryMode.Persistent,
            message_id=message_id,
            app_id=APP_ID,
            type=kind,
            headers=headers or None,
        )
        # A nack says the broker did not take the message: a quorum queue nacks while it has
        # no leader (just declared, a node restarting, a busy machine). Publishing it again
        # is safe and usually taken; after ``timeout`` seconds of nacks the caller hears.
        deadline, attempt = time.monotonic() + self.timeout, 1
        while True:
            try:
                self._publishing().basic_publish("", routing_key, body, properties, mandatory=True)
                return
            except pika.exceptions.NackError as error:
                pause = min(_NACK_PAUSE * 2 ** (attempt - 1), deadline - time.monotonic())
                if pause <= 0:
                    raise DeliveryFailed(
                        f"RabbitMQ nacked the message to queue {routing_key!r} {attempt} times "
                        f"in {self.timeout}s: the broker could not take it ({error})",
                        retryable=True,
                        code="NACK",
                        attempts=attempt,
                    ) from error
                self._connect().sleep(pause)
                attempt += 1

    # -- the host side --

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Hand out up to ``max_messages`` thread heads, waiting up to ``wait`` seconds for one."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        deadline = time.monotonic() + max(wait, 0.0)
        while True:
            handed = self._locked(lambda: self._hand_out(max_messages))
            remaining = deadline - time.monotonic()
            if handed or remaining <= 0:
                return handed
            # The broker pushes deliveries to this consumer: wait on the connection, which
            # returns as one comes (or another thread asks for the connection, see _locked).
            self._locked(partial(self._await_delivery, min(_SLICE, remaining)))

    def _await_delivery(self, seconds: float) -> None:
        self._consuming()
        assert self._connection is not None
        self._awaiting = self._connection
        try:
            # pika takes fractions of a second (its stubs say int).
            self._connection.process_data_events(seconds)  # pyright: ignore[reportArgumentType]
        finally:
            self._awaiting = None

    def _hand_out(self, limit: int) -> list[Received]:
        self._consuming()
        assert self._connection is not None
        self._connection.process_data_events(0)
        now = time.monotonic()
        busy: set[str] = set()
        for held in self._held.values():
            if held.receipt is not None and held.leased_until > now:
                busy.add(held.thread_id)
        handed: list[Received] = []
        seen: set[str] = set()
        for held in list(self._held.values()):
            if held.queue in self._giving_back:
                continue  # its shard goes to another host once nothing of it is in hand
            if held.poison is not None:
                # Never handed out, so it holds no thread back: dead-lettered at once.
                held.attempts += 1
                self._bury(held, held.poison)
                continue
            if held.thread_id in seen:
                continue  # an earlier message of its thread is here: not its turn
            seen.add(held.thread_id)
            if held.thread_id in busy or held.available_at > now or len(handed) >= limit:
                continue
            if held.attempts >= self.max_attempts:
                reason = held.error or (
                    f"never acknowledged in {held.attempts} deliveries (the host crashed or took "
                    f"longer than visibility_timeout={self.visibility_timeout}s)"
                )
                self._bury(held, reason)
                continue
            held.attempts += 1
            held.receipt = uuid.uuid4().hex
            held.leased_until = now + self.visibility_timeout
            handed.append(Received(held.id, held.thread_id, held.body, held.attempts, held.receipt))
        return handed

    def _mine(self, received: Received) -> _Held | None:
        held = self._held.get(received.id)
        if held is not None and held.receipt == received.receipt:
            return held
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            log_safe(received.id),
            log_safe(received.thread_id),
        )
        return None

    def ack(self, received: Received) -> bool:
        """Acknowledge the message (the queue removes it); False if its lease had run out."""
        return self._locked(lambda: self._ack(received))

    def _ack(self, received: Received) -> bool:
        # The channels first: reopening one forgets the deliveries of the old one, whose tags
        # mean nothing on the new one.
        self._consuming()
        held = self._mine(received)
        if held is None:
            return False
        self._consumers[held.queue].basic_ack(held.tag)
        del self._held[held.id]
        return True

    def extend(self, received: Received) -> bool:
        """Lease the message for another ``visibility_timeout`` seconds."""
        return self._locked(lambda: self._extend(received))

    def _extend(self, received: Received) -> bool:
        self._consuming()  # a closed channel's deliveries were requeued: none is held any more
        held = self._mine(received)
        if held is None:
            return False
        held.leased_until = time.monotonic() + self.visibility_timeout
        assert self._connection is not None
        self._connection.process_data_events(0)  # keeps the heartbeats going
        return True

    def release(self, received: Received) -> bool:
        """Hand the message out again at once, its attempt kept; False if its lease had run out."""
        return self._locked(lambda: self._release(received))

    def _release(self, received: Received) -> bool:
        # Kept in hand rather than requeued: a requeued message goes behind what this host
        # already holds, and its thread's later messages would overtake it.
        self._consuming()
        held = self._mine(received)
        if held is None:
            return False
        held.receipt = None
        held.available_at = time.monotonic()
        return True

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after ``retry_delay``, or dead-letter it."""
        return self._locked(lambda: self._fail(received, error, retry))

    def _fail(self, received: Received, error: str, retry: bool) -> bool:
        self._consuming()
        held = self._mine(received)
        if held is None:
            return False
        if not retry or held.attempts >= self.max_attempts:
            self._bury(held, error)
            return True
        held.receipt = None
        held.error = error
        held.available_at = time.monotonic() + self.retry_delay
        return False

    def _bury(self, held: _Held, error: str) -> None:
        letter: dict[str, Any] = {
            "id": held.id,
            "thread_id": held.thread_id,
            "message": held.body,
            "attempts": held.attempts,
            "error": error,
            "dead_at": format_utc(datetime.now(UTC)),
        }
        if held.poison is not None:
            letter["raw"] = base64.b64encode(held.raw).decode()  # kept byte for byte
        # Stored (confirmed) first, then acknowledged: a crash in between keeps two copies,
        # never none.
        channel = self._consumers[held.queue]
        self._publish(self.dead, _encode(letter), held.id, DEAD_LETTER_TYPE)
        if self._consumers.get(held.queue) is not channel:
            # The connection was opened again to publish: the broker requeued the message.
            raise pika.exceptions.ConnectionWrongStateError("connection lost while dead-lettering")
        channel.basic_ack(held.tag)
        del self._held[held.id]
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in queue %s",
            log_safe(held.id),
            log_safe(held.thread_id),
            held.attempts,
            error.partition(":")[0],
            self.dead,
        )

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first (read and put back)."""
        return self._locked(lambda: self._scan(None))

    def redrive(self, message_id: str) -> bool:
        """Send a dead letter again as a new message (at the end of the queue).

        A poison message goes back as it was and is dead-lettered again at its next receive,
        unless this host can read it now.
        """
        return bool(self._locked(lambda: self._scan(message_id)))

    def _scan(self, redrive: str | None) -> list[DeadLetter]:
        """Read the dead-letter queue; with ``redrive``, send that one back and remove it."""
        channel = self._connect().channel()
        letters: list[DeadLetter] = []
        try:
            while True:
                method, properties, body = channel.basic_get(self.dead, auto_ack=False)
                if method is None or properties is None or body is None:
                    break
                letter = _letter(properties, body, self.max_attempts)
                if redrive is not None and letter.id == redrive:
                    queue = self.route(letter.thread_id)
                    self._publish(queue, _original(properties, body), str(uuid.uuid4()))
                    channel.basic_ack(method.delivery_tag)  # pyright: ignore[reportArgumentType]
                    return [letter]
                letters.append(letter)
        finally:
            # Closing the channel puts back every dead letter read and not redriven, in order.
            with contextlib.suppress(pika.exceptions.AMQPError):
                channel.close()  # pyright: ignore[reportUnknownMemberType]
        return [] if redrive is not None else letters

    def describe(self) -> dict[str, Any]:
        """``url`` (refused with a password in it), ``queue``, and ``shards`` when above 1.

        ``shards`` goes with them because an answer must reach its thread's shard.
        """
        described: dict[str, Any] = {"url": self.url, "queue": self.queue}
        if self.shards > 1:
            described["shards"] = self.shards
        return described

    def close(self) -> None:
        """Close the connection (held messages go back to the queue). Safe to call twice."""
        with self._lock:
            self._drop()

    def _drop(self) -> None:
        connection = self._connection
        self._connection = self._publisher = self._roll_call = None
        self._consumers.clear()
        self._giving_back.clear()
        self._balanced_at = -math.inf
        self._held.clear()
        if connection is not None and connection.is_open:
            with contextlib.suppress(pika.exceptions.AMQPError):
                connection.close()

    def __repr__(self) -> str:
        return f"<RabbitMqEntry {self.name!r} queue={self.queue!r}>"


def _never_published(*_: object) -> None:
    """The roll-call queue's consumer: only counted, never sent anything."""


def _encode(body: dict[str, Any]) -> bytes:
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def _original(properties: pika.spec.BasicProperties, body: bytes) -> bytes:
    """The body a dead letter was sent with (a poison one byte for byte)."""
    if properties.type != DEAD_LETTER_TYPE:
        return body  # dead-lettered by the broker: the message itself
    letter = json.loads(body)
    return base64.b64decode(letter["raw"]) if "raw" in letter else _encode(letter["message"])


def _letter(properties: pika.spec.BasicProperties, body: bytes, limit: int) -> DeadLetter:
    if properties.type == DEAD_LETTER_TYPE:
        letter = json.loads(body)
        fields = (letter["id"], letter["thread_id"])
        rest = (letter["attempts"], letter["error"], letter["dead_at"])
        if "raw" in letter:  # poison: its bytes, shown safely
            return dead_letter(*fields, base64.b64decode(letter["raw"]), *rest)
        return DeadLetter(*fields, letter["message"], *rest)
    # Dead-lettered by the broker: delivered once more than the queue's delivery limit, and
    # every consumer closed without settling it (the broker drops x-delivery-count then).
    headers: Mapping[str, Any] = properties.headers or {}
    deaths: list[dict[str, Any]] = headers.get("x-death") or [{}]
    when = deaths[0].get("time")
    dead_at = format_utc(when) if isinstance(when, datetime) else ""
    letter = dead_letter(
        properties.message_id or "",
        "",
        body,
        limit + 1,
        "delivery limit reached: never acknowledged (the hosts holding it closed or crashed)",
        dead_at,
    )
    thread = letter.message.get("thread_id")
    return replace(letter, thread_id=thread) if isinstance(thread, str) else letter
