"""NatsEntry: start messages and answers through a JetStream work queue and a durable pull consumer."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

try:
    import nats.errors
    import nats.js.errors
    from nats.aio.client import Client
    from nats.aio.msg import Msg
    from nats.js import JetStreamContext
    from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy
    from nats.js.kv import KeyValue
except ImportError as error:  # pragma: no cover - the distribution depends on nats-py
    raise ImportError("NatsEntry needs nats-py: pip install agent-wait-nats") from error

from agent_wait.core import (
    DeadLetter,
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
    connection_errors,
    dead_letter,
    read_message,
    transport_headers,
)
from agent_wait.nats._announcer import _LoopThread  # pyright: ignore[reportPrivateUsage]
from agent_wait.nats._options import (
    DEFAULT_DURABLE,
    DEFAULT_ENTRY_STREAM,
    DEFAULT_ENTRY_SUBJECT,
    DEFAULT_URL,
    NatsEntryOptions,
    servers,
)

logger = logging.getLogger("agent_wait.nats.entry")

_ACK = b"+ACK"
_PROGRESS = b"+WPI"
# Seconds to wait for the server's answer to a pull request beyond its own wait: it always
# answers, with a message or a status saying the request ended without one.
_ANSWER = 1.0
# Seconds: a pull request that would wait less asks without waiting.
_SHORTEST_WAIT = 0.1
# Statuses that end a pull request without a message and without an error: none there (404),
# expired (408), ended by the server, as when the consumer changed (409).
_NO_MESSAGE = frozenset({"404", "408", "409"})
# What may pass by itself: the connection lost, closed after its reconnect attempts (the next
# call opens a new one) or reconnecting, and JetStream not answering meanwhile. Timeouts are
# TimeoutError already.
_CONNECTION_ERRORS = (
    OSError,
    nats.errors.ConnectionClosedError,
    nats.errors.ConnectionReconnectingError,
    nats.errors.ConnectionDrainingError,
    nats.errors.StaleConnectionError,
    nats.errors.OutboundBufferLimitError,
    nats.errors.NoServersError,
    nats.errors.NoRespondersError,
    nats.js.errors.ServiceUnavailableError,
)


def _token(thread_id: str) -> str:
    """A thread id as one subject token (any text becomes ``[A-Za-z0-9_-]``)."""
    return base64.urlsafe_b64encode(thread_id.encode()).decode().rstrip("=")


def _thread_of(subject: str) -> str:
    """The thread id a subject's last token encodes (empty if it encodes none)."""
    token = subject.rpartition(".")[2]
    try:
        return base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    except ValueError:  # binascii.Error and UnicodeDecodeError are ValueErrors
        return ""


class NatsEntry(EntryPoint):
    """An entry point on NATS JetStream: a work-queue stream read by a durable pull consumer.

    ``send`` publishes the message to ``<subject>.<thread>`` (the thread id encoded as one
    subject token) and waits for the stream's ack. ``receive`` fetches from the durable
    consumer (``ack_wait`` = ``visibility_timeout``): ``ack`` acknowledges (the work queue
    removes the message), ``extend`` sends an in-progress ack, ``fail`` naks with a delay of
    ``retry_delay`` seconds, ``release`` naks with none (the attempt stays counted), and a
    message never acknowledged is redelivered by JetStream when ``ack_wait`` runs out.

    Per-thread order: a fetched message is handed out only when it is the oldest message of
    its thread still in the stream; a later one is nak'ed for ``hold_delay`` seconds and
    offered again. Because JetStream counts those hold-backs as deliveries, attempts are
    counted in a key-value bucket (``<stream>_ATTEMPTS``, one key per message while it is in
    hand) rather than with the consumer's ``max_deliver``. After ``max_attempts`` the message is
    moved to the dead-letter stream ``<stream>_DEAD`` (subject ``<subject>-dead.<id>``), logged
    at ERROR, and removed from the queue.

    Args:
        url: Server URL(s), as for the ``nats`` announcer; may carry credentials.
        stream: The work-queue stream (``<stream>_DEAD`` and the ``<stream>_ATTEMPTS`` bucket
            go with it).
        subject: The subject prefix; messages go to ``<subject>.<thread>``.
        durable: The durable consumer's name, shared by every host of this entry point.
        create: Create the stream, the dead-letter stream, the bucket and the consumer when
            missing (and set the consumer's ``ack_wait``).
        visibility_timeout: Seconds a received message stays leased (the consumer's
            ``ack_wait``).
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is delivered again (the nak delay).
        hold_delay: Seconds before a message held back behind its thread's earlier one is
            offered again.
        timeout: Seconds to wait to connect and for each server reply.

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "nats"
    options_model = NatsEntryOptions

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        stream: str = DEFAULT_ENTRY_STREAM,
        subject: str = DEFAULT_ENTRY_SUBJECT,
        durable: str = DEFAULT_DURABLE,
        create: bool = True,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        hold_delay: float = 0.2,
        timeout: float = 5.0,
    ) -> None:
        options = NatsEntryOptions.parse(
            self.name,
            {
                "url": url if isinstance(url, str) else list(url),
                "stream": stream,
                "subject": subject,
                "durable": durable,
                "create": create,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "hold_delay": hold_delay,
                "timeout": timeout,
            },
        )
        self.servers = servers(options.url)
        self.stream = stream = options.stream
        self.subject = subject = options.subject
        self.durable = options.durable
        self.create = options.create
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self.hold_delay = options.hold_delay
        self.timeout = options.timeout
        self.dead_stream = f"{stream}_DEAD"
        self.dead_subject = f"{subject}-dead"
        self.bucket = f"{stream}_ATTEMPTS"
        self._runner: _LoopThread | None = None
        self._session: _Session | None = None
        self._opening: asyncio.Lock | None = None

    # -- plumbing: one connection on a private loop thread, set up on first use --

    def _run(self, action: Any) -> Any:
        if self._runner is None:
            self._runner = _LoopThread()
        shown = ", ".join(redact(s) for s in self.servers)
        with connection_errors(_CONNECTION_ERRORS, f"NATS at {shown}"):
            return self._runner.run(self._with_session(action))

    async def _with_session(self, action: Any) -> Any:
        if self._opening is None:
            self._opening = asyncio.Lock()  # on the private loop, its only user
        async with self._opening:
            # Calls from several threads share the loop: one of them connects.
            if self._session is None or self._session.closed:
                self._session = await self._open()
            session = self._session
        return await action(session)

    async def _open(self) -> _Session:
        try:
            client = await nats.connect(  # pyright: ignore[reportUnknownMemberType]
                servers=list(self.servers),
                name="agent-wait-entry",
                connect_timeout=self.timeout,  # pyright: ignore[reportArgumentType] - floats work
                max_reconnect_attempts=2,
                reconnect_time_wait=0.25,  # pyright: ignore[reportArgumentType]
            )
        except (TimeoutError, nats.errors.NoServersError, OSError) as error:
            shown = ", ".join(redact(s) for s in self.servers)
            raise ConnectionError(f"cannot reach NATS at {shown}: {error!r}") from None
        js = client.jetstream(timeout=self.timeout)  # pyright: ignore[reportUnknownMemberType]
        try:
            if self.create:
                await self._provision(js)
            kv = await js.key_value(self.bucket)
            inbox = _Inbox(client)
            await inbox.open(f"$JS.API.CONSUMER.MSG.NEXT.{self.stream}.{self.durable}")
        except BaseException:
            await client.close()
            raise
        return _Session(client, js, kv, inbox)

    async def _provision(self, js: JetStreamContext) -> None:
        await _ensure_stream(
            js, self.stream, [f"{self.subject}.*"], retention=RetentionPolicy.WORK_QUEUE
        )
        # One message per dead letter's subject: burying a message twice keeps one copy.
        await _ensure_stream(
            js, self.dead_stream, [f"{self.dead_subject}.*"], max_msgs_per_subject=1
        )
        try:
            await js.key_value(self.bucket)
        except nats.js.errors.BucketNotFoundError:
            await js.create_key_value(bucket=self.bucket, history=1)  # pyright: ignore[reportUnknownMemberType]
        config = ConsumerConfig(
            durable_name=self.durable,
            ack_policy=AckPolicy.EXPLICIT,
            ack_wait=self.visibility_timeout,
            # Attempts are counted here, not by JetStream: hold-backs are deliveries to it.
            max_deliver=-1,
            filter_subject=f"{self.subject}.*",
        )
        await js.add_consumer(self.stream, config)  # pyright: ignore[reportUnknownMemberType]

    # -- the consumer side --

    def send(self, message: Mapping[str, Any]) -> None:
        """Publish the message to its thread's subject and wait for the stream's ack.

        The plugins' headers (a trace context) go in its NATS headers.
        """
        # Read here, in the sender's thread and context: the publish runs on the loop thread.
        headers = dict(transport_headers(parse_message(message)))
        body = dict(message)
        self._run(lambda s: self._publish(s, body, headers))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _publish(
        self, session: _Session, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> None:
        data = check_body_size(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode())
        subject = f"{self.subject}.{_token(body['thread_id'])}"
        await session.js.publish(
            subject, data, stream=self.stream, timeout=self.timeout, headers=headers or None
        )

    # -- the host side --

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Fetch up to ``max_messages`` thread heads, waiting up to ``wait`` seconds for one.

        Raises:
            ConnectionError: The server cannot be reached, or has no such consumer.
        """
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        return self._run(lambda s: self._receive(s, max_messages, max(wait, 0.0)))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _receive(self, session: _Session, limit: int, wait: float) -> list[Received]:
        deadline = time.monotonic() + wait
        handed: list[Received] = []
        fetched = 0
        while True:
            # One message per pull request: a request for more stays open on the server after
            # this call returns and takes messages (a held-back one coming round again) that
            # nobody here hands out until ack_wait runs out. The first waits; the rest only
            # take what is there.
            remaining = 0.0 if handed else deadline - time.monotonic()
            # A request expiring within moments is what meets a redelivery falling due (see
            # _Inbox): what is left of the wait below that asks without waiting.
            waiting = remaining if remaining >= _SHORTEST_WAIT else 0.0
            try:
                msg = await session.inbox.pull(waiting)
            except TimeoutError:
                await self._check_consumer(session)
                msg = None  # it is there: the server was slow to answer
            if msg is None:
                if not waiting:
                    return handed
                continue
            fetched += 1
            received = await self._admit(session, msg)
            if received is not None:
                handed.append(received)
            # Held-back messages come round again: stop after a batch's worth past the wait.
            if len(handed) >= limit or (not waiting and fetched >= 2 * limit):
                return handed

    async def _check_consumer(self, session: _Session) -> None:
        try:
            await session.js.consumer_info(self.stream, self.durable)
        except nats.js.errors.NotFoundError:
            raise ConnectionError(
                f"NATS stream {self.stream!r} has no consumer {self.durable!r} to receive from "
                "(create=True makes it)"
            ) from None

    async def _admit(self, session: _Session, msg: Msg) -> Received | None:
        seq = msg.metadata.sequence.stream
        head = await session.js.get_msg(self.stream, seq=1, subject=msg.subject, next=True)
        if head.seq is not None and head.seq < seq:
            # An earlier message of this thread is still in hand or waiting: not yet.
            await msg.nak(delay=self.hold_delay)
            return None
        read = read_message(msg.data)
        thread_id = _thread_of(msg.subject) if isinstance(read, Poison) else str(read["thread_id"])
        record, revision = await self._record(session, seq)
        delivered = msg.metadata.num_delivered
        if record.get("receipt") and delivered <= record.get("delivered", 0):
            # The server sent a delivery it did not count while an earlier one is still in
            # hand (a pull request that ended as it was served): the holder keeps the lease,
            # and if it dies the server's counted redelivery comes after ack_wait.
            logger.debug(
                "message %s of thread %s: sent again while in hand", seq, log_safe(thread_id)
            )
            return None
        attempts, error = int(record.get("attempts", 0)), record.get("error")
        if isinstance(read, Poison):
            # Never handed out: its thread's next message follows at once.
            await self._bury(session, seq, thread_id, {}, attempts + 1, read.error, msg.reply, msg)
            return None
        body = read
        if attempts >= self.max_attempts:
            # Its last lease ran out: the receiver died or was too slow every time.
            reason = error or (
                f"never acknowledged in {attempts} deliveries (the host crashed or took longer "
                f"than visibility_timeout={self.visibility_timeout}s)"
            )
            await self._bury(session, seq, thread_id, body, attempts, reason, msg.reply)
            return None
        record_value = {
            "attempts": attempts + 1,
            "receipt": msg.reply,
            "error": error,
            "delivered": delivered,
        }
        try:
            if revision is None:
                await session.kv.create(str(seq), json.dumps(record_value).encode())
            else:
                await session.kv.update(str(seq), json.dumps(record_value).encode(), last=revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            # Another host took the same delivery's record first; let it have the message.
            return None
        return Received(str(seq), thread_id, body, attempts + 1, msg.reply)

    async def _record(self, session: _Session, seq: int) -> tuple[dict[str, Any], int | None]:
        """The message's attempts record (empty if none yet) and its revision."""
        try:
            entry = await session.kv.get(str(seq))
        except nats.js.errors.KeyNotFoundError:
            return {}, None
        if entry.value is None:
            return {}, entry.revision
        record: dict[str, Any] = json.loads(entry.value)
        return record, entry.revision

    async def _mine(self, session: _Session, received: Received) -> int | None:
        """The attempts record's revision if ``received`` still holds the lease, else None."""
        try:
            entry = await session.kv.get(received.id)
        except nats.js.errors.KeyNotFoundError:
            entry = None
        if (
            entry is not None
            and entry.value
            and json.loads(entry.value)["receipt"] == received.receipt
        ):
            return entry.revision
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            log_safe(received.id),
            log_safe(received.thread_id),
        )
        return None

    async def _forget(self, session: _Session, seq: str) -> None:
        # A purge, not a delete: no marker stays behind for a message that is gone.
        await session.js.purge_stream(f"KV_{self.bucket}", subject=f"$KV.{self.bucket}.{seq}")

    def ack(self, received: Received) -> bool:
        """Acknowledge the message (the work queue removes it); False if its lease had run out."""
        return self._run(lambda s: self._ack(s, received))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _ack(self, session: _Session, received: Received) -> bool:
        if await self._mine(session, received) is None:
            return False
        await session.client.request(received.receipt, _ACK, timeout=self.timeout)
        await self._forget(session, received.id)
        return True

    def extend(self, received: Received) -> bool:
        """Send an in-progress ack: the lease runs ``visibility_timeout`` seconds from now."""
        return self._run(lambda s: self._extend(s, received))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _extend(self, session: _Session, received: Received) -> bool:
        if await self._mine(session, received) is None:
            return False
        await session.client.publish(received.receipt, _PROGRESS)
        await session.client.flush(timeout=int(self.timeout) or 1)
        return True

    def release(self, received: Received) -> bool:
        """Nak the message with no delay, its attempt kept; False if its lease had run out."""
        return self._run(lambda s: self._release(s, received))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _release(self, session: _Session, received: Received) -> bool:
        record, revision = await self._record(session, int(received.id))
        if revision is None or record.get("receipt") != received.receipt:
            logger.warning(
                "message %s of thread %s: its lease ran out before it was released "
                "(handed out again)",
                log_safe(received.id),
                log_safe(received.thread_id),
            )
            return False
        # No longer held, the attempt counted and an earlier failure's error kept: the next
        # delivery is the next attempt.
        released = {"attempts": received.attempt, "receipt": None, "error": record.get("error")}
        try:
            await session.kv.update(received.id, json.dumps(released).encode(), last=revision)
        except nats.js.errors.KeyWrongLastSequenceError:
            return False  # taken over by another receiver in between
        await session.client.publish(received.receipt, b"-NAK")
        await session.client.flush(timeout=int(self.timeout) or 1)
        return True

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Nak the message with ``retry_delay``, or dead-letter it; True if dead-lettered."""
        return self._run(lambda s: self._fail(s, received, error, retry))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _fail(self, session: _Session, received: Received, error: str, retry: bool) -> bool:
        revision = await self._mine(session, received)
        if revision is None:
            return False
        if not retry or received.attempt >= self.max_attempts:
            await self._bury(
                session,
                int(received.id),
                received.thread_id,
                received.message,
                received.attempt,
                error,
                received.receipt,
            )
            return True
        record = {"attempts": received.attempt, "receipt": None, "error": error}
        await session.kv.update(received.id, json.dumps(record).encode(), last=revision)
        nak = b"-NAK"
        if self.retry_delay > 0:
            nak += b" " + json.dumps({"delay": int(self.retry_delay * 1e9)}).encode()
        await session.client.publish(received.receipt, nak)
        await session.client.flush(timeout=int(self.timeout) or 1)
        return False

    async def _bury(
        self,
        session: _Session,
        seq: int,
        thread_id: str,
        body: dict[str, Any],
        attempts: int,
        error: str,
        reply: str | None,
        poison: Msg | None = None,
    ) -> None:
        letter: dict[str, Any] = {
            "message": body,
            "thread_id": thread_id,
            "attempts": attempts,
            "error": error,
            "dead_at": format_utc(datetime.now(UTC)),
        }
        if poison is not None:
            # Kept byte for byte, with its subject (its thread), for redrive.
            letter["raw"] = base64.b64encode(poison.data).decode()
            letter["subject"] = poison.subject
        data = json.dumps(letter, ensure_ascii=False, separators=(",", ":")).encode()
        # Stored first, then removed from the queue: a crash in between buries it twice (one
        # copy is kept), never loses it.
        await session.js.publish(
            f"{self.dead_subject}.{seq}", data, stream=self.dead_stream, timeout=self.timeout
        )
        if reply:
            await session.client.request(reply, _ACK, timeout=self.timeout)
        await self._forget(session, str(seq))
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in stream %s",
            seq,
            log_safe(thread_id),
            attempts,
            error.partition(":")[0],
            self.dead_stream,
        )

    def oldest_waiting(self) -> float | None:
        """Seconds since the stream's first message was stored, by the server's clock, or None.

        The stream is a work queue: a message leaves it when acknowledged or dead-lettered, so
        its first message is the oldest waiting.
        """
        return self._run(self._oldest_waiting)

    async def _oldest_waiting(self, session: _Session) -> float | None:
        state = (await session.js.stream_info(self.stream)).state
        if not state.messages:
            return None
        try:
            # next: the first message from that sequence on, should that one have just gone.
            raw = await session.js.get_msg(self.stream, state.first_seq, next=True)
        except nats.js.errors.NotFoundError:
            return None  # emptied meanwhile
        if raw.time is None:
            return None
        return max(0.0, (datetime.now(UTC) - raw.time).total_seconds())

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first (a scan of the dead-letter stream)."""
        return self._run(self._dead_letters)

    async def _dead_letters(self, session: _Session) -> list[DeadLetter]:
        state = (await session.js.stream_info(self.dead_stream)).state
        letters: list[DeadLetter] = []
        if not state.messages:
            return letters
        for seq in range(state.first_seq, state.last_seq + 1):
            try:
                raw = await session.js.get_msg(self.dead_stream, seq)
            except nats.js.errors.NotFoundError:
                continue  # redriven
            assert raw.subject is not None
            assert raw.data is not None
            letter = json.loads(raw.data)
            seq, thread_id = raw.subject.rpartition(".")[2], letter["thread_id"]
            attempts, error, dead_at = letter["attempts"], letter["error"], letter["dead_at"]
            if "raw" in letter:  # poison: its bytes, shown safely
                raw_body = base64.b64decode(letter["raw"])
                letters.append(dead_letter(seq, thread_id, raw_body, attempts, error, dead_at))
            else:
                letters.append(
                    DeadLetter(seq, thread_id, letter["message"], attempts, error, dead_at)
                )
        return letters

    def redrive(self, message_id: str) -> bool:
        """Send a dead letter again as a new message (at the end of its thread's queue).

        A poison message goes back as it was and is dead-lettered again at its next receive,
        unless this host can read it now.
        """
        return self._run(lambda s: self._redrive(s, message_id))  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]

    async def _redrive(self, session: _Session, message_id: str) -> bool:
        if not isinstance(message_id, str) or not message_id.isdigit():  # pyright: ignore[reportUnnecessaryIsInstance]
            return False
        subject = f"{self.dead_subject}.{message_id}"
        try:
            raw = await session.js.get_msg(self.dead_stream, subject=subject)
        except nats.js.errors.NotFoundError:
            return False
        assert raw.data is not None
        letter = json.loads(raw.data)
        if "raw" in letter:
            # Poison goes back as it was, to its thread's subject.
            await session.js.publish(
                letter["subject"],
                base64.b64decode(letter["raw"]),
                stream=self.stream,
                timeout=self.timeout,
            )
        else:
            await self._publish(session, letter["message"])
        await session.js.purge_stream(self.dead_stream, subject=subject)
        return True

    def describe(self) -> dict[str, Any]:
        """``url`` (refused with a credential in it), ``stream`` and ``subject``."""
        return {"url": ",".join(self.servers), "stream": self.stream, "subject": self.subject}

    def close(self) -> None:
        """Close the connection and stop the private loop thread. Safe to call more than once."""
        runner, self._runner = self._runner, None
        session, self._session = self._session, None
        self._opening = None  # bound to the loop that stops here
        if runner is None:
            return
        try:
            if session is not None:
                runner.run(session.close())
        finally:
            runner.close()

    def __repr__(self) -> str:
        return f"<NatsEntry {self.name!r} stream={self.stream!r} subject={self.subject!r}>"


class _Inbox:
    """Pull requests to the durable consumer, one message each, and the replies to them.

    A request that does not wait is a no-wait request: the server answers it at once and it
    never stays open. A request that waits expires on the server. Some servers (2.9.10 seen)
    lose a redelivery that falls due just as a waiting request expires, until ``ack_wait``
    runs out; a held-back message falls due ``hold_delay`` after its nak, so short expiring
    requests after every receive met it often, no-wait requests never do.

    Each request has its own reply subject, so the status that ends a request (no message,
    expired) is told from one ending an earlier request. A message delivered to an earlier
    request after it was given up on is kept and handed to the next pull.
    """

    def __init__(self, client: Client) -> None:
        self.client = client
        self.replies: asyncio.Queue[Msg] = asyncio.Queue()
        self.prefix = client.new_inbox()
        self.requests = 0
        self.next_subject = ""

    async def open(self, next_subject: str) -> None:
        self.next_subject = next_subject
        await self.client.subscribe(f"{self.prefix}.*", cb=self._take)  # pyright: ignore[reportUnknownMemberType]

    async def _take(self, msg: Msg) -> None:
        self.replies.put_nowait(msg)

    async def pull(self, wait: float) -> Msg | None:
        """The next message for this consumer, waiting up to ``wait`` seconds; None if none."""
        while not self.replies.empty():
            msg = self.replies.get_nowait()
            if not _status(msg):
                return msg
        self.requests += 1
        reply = f"{self.prefix}.{self.requests}"
        request: dict[str, Any] = {"batch": 1}
        if wait > 0:
            request["expires"] = int(wait * 1e9)
        else:
            request["no_wait"] = True
        await self.client.publish(self.next_subject, json.dumps(request).encode(), reply=reply)
        give_up = time.monotonic() + max(wait, 0.0) + _ANSWER
        while (remaining := give_up - time.monotonic()) > 0:
            try:
                msg = await asyncio.wait_for(self.replies.get(), remaining)
            except TimeoutError:
                break
            status = _status(msg)
            if not status:
                return msg
            if status == "100":  # an idle heartbeat: the request is still open
                continue
            if status not in _NO_MESSAGE:
                description = msg.headers.get("Description", "") if msg.headers else ""
                raise ConnectionError(
                    f"NATS answered a pull request on {self.next_subject} with status "
                    f"{status} {description}".rstrip()
                )
            if msg.subject == reply:
                return None
        # The server answers every pull request of a consumer it has: none came.
        raise TimeoutError(f"no answer to a pull request on {self.next_subject}")


def _status(msg: Msg) -> str | None:
    """The status of a reply that carries no message (404 none, 408 expired, ...), else None."""
    return msg.headers.get("Status") if msg.headers else None


class _Session:
    """A connection, its JetStream context, the attempts bucket and the pull requests' inbox."""

    def __init__(self, client: Client, js: JetStreamContext, kv: KeyValue, inbox: _Inbox) -> None:
        self.client = client
        self.js = js
        self.kv = kv
        self.inbox = inbox

    @property
    def closed(self) -> bool:
        return self.client.is_closed

    async def close(self) -> None:
        if not self.client.is_closed:
            await self.client.close()


async def _ensure_stream(
    js: JetStreamContext, name: str, subjects: list[str], **config: Any
) -> None:
    try:
        await js.stream_info(name)
    except nats.js.errors.NotFoundError:
        await js.add_stream(name=name, subjects=subjects, **config)  # pyright: ignore[reportUnknownMemberType]
