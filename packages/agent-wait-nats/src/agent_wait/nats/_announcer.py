"""NatsAnnounce: one JetStream message per question, ``Nats-Msg-Id`` = the dedupe key."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Coroutine, Sequence
from typing import Any, Self, TypeVar
from urllib.parse import quote

try:
    import nats
    import nats.errors
    import nats.js.errors
    from nats.aio.client import Client
    from nats.js import JetStreamContext
except ImportError as error:  # pragma: no cover - the distribution depends on nats-py
    raise ImportError("NatsAnnounce needs nats-py: pip install agent-wait-nats") from error

from agent_wait.core import (
    BaseAnnounce,
    DeliveryFailed,
    DeliveryOutcome,
    Receipt,
    WaitEnvelope,
)
from agent_wait.core.options import redact
from agent_wait.core.transport import ClientPair, transport_headers
from agent_wait.nats._options import DEFAULT_SUBJECT, DEFAULT_URL, NatsOptions, servers
from agent_wait.nats._subject import SubjectTemplate

logger = logging.getLogger(__name__)

TAG_HEADER_PREFIX = "Agent-Wait-Tag-"
# RFC 9110 token characters stay as they are in a header name; the rest is percent-encoded.
_TOKEN_SAFE = "!#$&'*+-.^_`|~"
# Header values stay printable ASCII: CR/LF would end the header, '%' is the escape itself.
_VALUE_SAFE = "".join(chr(c) for c in range(0x20, 0x7F) if chr(c) != "%")
# After a lost connection nats-py retries this often, this far apart, then closes the client;
# the next delivery connects afresh. Small numbers keep an unreachable server a fast failure.
_RECONNECT_ATTEMPTS = 2
_RECONNECT_WAIT = 0.25

T = TypeVar("T")


class NatsAnnounce(BaseAnnounce):
    """Publishes each envelope to a JetStream subject and waits for the stream's ack.

    The message body is the contract JSON. ``Nats-Msg-Id`` is the envelope's dedupe key, so
    JetStream drops a republish that arrives within the stream's duplicate window (default two
    minutes): the ack says ``duplicate`` and the stream keeps one message. That counts as
    delivered. A republish after the window is stored again; consumers deduplicate on the key.
    Tags travel as ``Agent-Wait-Tag-<name>`` headers (name and value percent-encoded where they
    are not plain header text), plus ``Content-Type: application/json``.

    The async path uses a connection on the caller's event loop. The sync path runs the same
    client on a private event-loop thread, so it works whether or not a loop is running.

    Args:
        url: Server URL, ``nats://host:4222`` (several comma-separated, or a list); may carry
            ``user:password@`` or a ``token@``.
        subject: Subject template, e.g. ``agent-wait.questions.{tags[approver_group]}``. See
            :class:`~agent_wait.nats._subject.SubjectTemplate` for the placeholders.
        stream: The stream expected to store the messages (sent as ``Nats-Expected-Stream``, so
            a message captured by another stream fails). Needed for ``create_stream``.
        create_stream: Create ``stream`` (subjects: the template with each placeholder token as
            ``*``) when it does not exist yet.
        duplicate_window: Seconds of the duplicate window of a stream created here.
        timeout: Seconds to wait to connect and for each publish ack.

    Raises:
        ConfigError: An option is invalid (the message names it and the value).
    """

    name = "nats"
    options_model = NatsOptions

    def __init__(
        self,
        url: str | Sequence[str] = DEFAULT_URL,
        subject: str = DEFAULT_SUBJECT,
        stream: str | None = None,
        create_stream: bool = False,
        duplicate_window: float = 120.0,
        timeout: float = 5.0,
    ) -> None:
        options = NatsOptions.parse(
            self.name,
            {
                "url": url if isinstance(url, str) else list(url),
                "subject": subject,
                "stream": stream,
                "create_stream": create_stream,
                "duplicate_window": duplicate_window,
                "timeout": timeout,
            },
        )
        self.servers = servers(options.url)
        self.subject = SubjectTemplate(options.subject)
        self.stream = options.stream
        self.create_stream = options.create_stream
        self.duplicate_window = options.duplicate_window
        self.timeout = options.timeout
        # The sync path's connection lives on a private loop thread, started on first use; a
        # nats-py client belongs to the loop it connected on, so the async path has one per
        # running loop (a host calling asyncio.run() per message still works).
        self._clients = ClientPair[_LoopThread, _Connection](_LoopThread, _Connection)

    def _headers(self, envelope: WaitEnvelope) -> dict[str, str]:
        headers = {
            # Plugins' headers (a trace context) first: they never replace one of ours.
            **transport_headers(envelope),
            "Nats-Msg-Id": quote(envelope.dedupe_key, safe=_VALUE_SAFE),
            "Content-Type": "application/json",
        }
        for name, value in envelope.tags.items():
            headers[TAG_HEADER_PREFIX + quote(name, safe=_TOKEN_SAFE)] = quote(
                value, safe=_VALUE_SAFE
            )
        return headers

    def deliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Publish every envelope concurrently on the private loop; one outcome per envelope.

        A delivered envelope's outcome is the receipt with the stream sequence number its ack
        carries (a duplicate ack counts as delivered). A failed one's is a ``LookupError`` (the
        subject template needs a tag the envelope lacks, or no stream stores the subject) or
        :class:`~agent_wait.core.DeliveryFailed`: no server could be reached, or the publish
        failed or timed out (``retryable`` for timeouts, connection errors and an unavailable
        JetStream). ``deliver`` is a batch of one.
        """
        if not envelopes:
            return []
        runner = self._clients.sync()
        return runner.run(self._publish_many(runner.connection, envelopes))

    async def adeliver_many(self, envelopes: Sequence[WaitEnvelope]) -> list[DeliveryOutcome]:
        """Publish every envelope concurrently, acks awaited together; one outcome per envelope."""
        if not envelopes:
            return []
        conn = await self._clients.async_client()
        assert conn is not None  # built here, never None
        return await self._publish_many(conn, envelopes)

    async def _publish_many(
        self, conn: _Connection, envelopes: Sequence[WaitEnvelope]
    ) -> list[DeliveryOutcome]:
        try:
            js = await self._jetstream(conn)
        except Exception as error:  # noqa: BLE001 - no connection: every envelope's outcome
            return [_classified(error)] * len(envelopes)
        results = await asyncio.gather(
            *(self._publish(js, e) for e in envelopes), return_exceptions=True
        )
        outcomes: list[DeliveryOutcome] = []
        for result in results:
            if isinstance(result, BaseException) and not isinstance(result, Exception):
                raise result  # cancellation and interpreter exits are not delivery outcomes
            outcomes.append(_classified(result) if isinstance(result, Exception) else result)
        return outcomes

    async def _publish(self, js: JetStreamContext, envelope: WaitEnvelope) -> Receipt:
        subject = self.subject.render(envelope)
        try:
            ack = await js.publish(
                subject,
                envelope.to_json(),
                timeout=self.timeout,
                stream=self.stream,
                headers=self._headers(envelope),
            )
        except nats.js.errors.NoStreamResponseError as error:
            raise LookupError(
                f"no JetStream stream stores subject {subject!r}; create one or set create_stream"
            ) from error
        if ack.duplicate:
            logger.debug(
                "nats: %s was a duplicate inside the window of stream %s",
                envelope.dedupe_key,
                ack.stream,
            )
        return Receipt(str(ack.seq), 1)

    async def _jetstream(self, conn: _Connection) -> JetStreamContext:
        async with conn.lock:
            if conn.client is None or conn.client.is_closed:
                client = await self._connect()
                js = client.jetstream(timeout=self.timeout)  # pyright: ignore[reportUnknownMemberType]
                try:
                    if self.create_stream:
                        await self._ensure_stream(js)
                except BaseException:
                    await client.close()
                    raise
                conn.client, conn.js = client, js
            assert conn.js is not None
            return conn.js

    async def _connect(self) -> Client:
        errors: list[Exception] = []

        async def on_error(error: Exception) -> None:
            # nats-py reports each failed attempt here; keep the last for a clear message.
            errors.append(error)
            logger.debug("nats: %s", error)

        try:
            return await nats.connect(  # pyright: ignore[reportUnknownMemberType]
                servers=list(self.servers),
                name="agent-wait",
                connect_timeout=self.timeout,  # pyright: ignore[reportArgumentType] - floats work
                reconnect_time_wait=_RECONNECT_WAIT,  # pyright: ignore[reportArgumentType]
                max_reconnect_attempts=_RECONNECT_ATTEMPTS,
                error_cb=on_error,
            )
        except (TimeoutError, nats.errors.NoServersError, OSError) as error:
            cause = errors[-1] if errors else error
            raise ConnectionError(
                f"cannot reach NATS at {', '.join(redact(s) for s in self.servers)}: {cause!r}"
            ) from error

    async def _ensure_stream(self, js: JetStreamContext) -> None:
        assert self.stream is not None
        try:
            await js.stream_info(self.stream)
        except nats.js.errors.NotFoundError:
            await js.add_stream(  # pyright: ignore[reportUnknownMemberType]
                name=self.stream,
                subjects=[self.subject.wildcard()],
                duplicate_window=self.duplicate_window,
            )

    @property
    def destination(self) -> str:
        """The JetStream stream when there is one, else the subject template."""
        return self.stream or self.subject.template

    def check_connection(self) -> bool:
        """Connect, and read the stream's info when ``stream`` is set and not created here.

        For ``agent-wait config check --connect``; publishes nothing and creates nothing.
        """
        runner = self._clients.sync()
        runner.run(self._check())
        return True

    async def _check(self) -> None:
        client = await self._connect()
        try:
            if self.stream is not None and not self.create_stream:
                js = client.jetstream(timeout=self.timeout)  # pyright: ignore[reportUnknownMemberType]
                await js.stream_info(self.stream)
        finally:
            await client.close()

    def close(self) -> None:
        """Close the sync path's connection and stop its private loop thread."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the connection of the running loop, then the sync path's."""
        await self._clients.aclose()


class _Connection:
    """A client and its JetStream context, used on one event loop only; connects lazily."""

    def __init__(self) -> None:
        self.client: Client | None = None
        self.js: JetStreamContext | None = None
        self.lock = asyncio.Lock()  # binds to the loop of its first use

    async def close(self) -> None:
        client, self.client, self.js = self.client, None, None
        if client is not None and not client.is_closed:
            await client.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.close()


class _LoopThread:
    """A private event loop in a daemon thread, for the sync path of an async-only client."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.connection = _Connection()  # used on self.loop only
        self._thread = threading.Thread(
            target=self.loop.run_forever, name="agent-wait-nats", daemon=True
        )
        self._thread.start()

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        # Blocks only the calling thread; a loop running in that thread is not re-entered.
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        """Close the connection and stop the loop thread."""
        try:
            self.run(self.connection.close())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
            self.loop.close()


def _classified(error: Exception) -> Exception:
    """nats-py's errors (and no reachable server) as :class:`DeliveryFailed`; others unchanged."""
    if not isinstance(error, nats.errors.Error | ConnectionError):
        return error
    # A 503 from JetStream means no responders or a stream without a leader: it may pass.
    unavailable = isinstance(error, nats.js.errors.APIError) and error.code == 503  # pyright: ignore[reportUnknownMemberType]
    retryable = unavailable or isinstance(
        error,
        ConnectionError
        | nats.errors.TimeoutError
        | nats.errors.NoRespondersError
        | nats.errors.ConnectionClosedError
        | nats.errors.NoServersError
        | nats.errors.StaleConnectionError,
    )
    failed = DeliveryFailed(
        f"NATS: {type(error).__name__}: {error}",
        retryable=retryable,
        code=type(error).__name__,
        attempts=1,
    )
    failed.__cause__ = error
    return failed
