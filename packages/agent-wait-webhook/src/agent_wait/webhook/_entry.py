"""The ``webhook`` entry point: start and answer messages arrive at the host over HTTP.

Two halves in one object, either or both used:

- **The host side** is an ASGI app (:attr:`WebhookEntry.app`, mounted by the host's own server)
  or the standard library's threading HTTP server on ``listen``. Each POST is verified (Standard Webhooks signature when a
  secret is set) and then *held*: its message waits in memory for :meth:`WebhookEntry.receive`,
  and the request is answered only once the message is settled: ``200`` after
  :meth:`~WebhookEntry.ack`, ``202`` once it was dead-lettered (kept in a table on the host),
  ``503`` when the host shuts down first. A sender therefore retries whatever the host did not
  take responsibility for, and a host that crashes answers nothing, so the message comes again.
- **The consumer side** is :meth:`WebhookEntry.send`: it writes the message to an outbox (a
  ``sqlite`` entry-point table) and returns; a delivery thread POSTs each outbox message, signed,
  until a ``2xx`` comes back, then removes it. The outbox hands out a thread's messages one at
  a time, so a thread's next message is posted only after the host settled the previous one.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import sqlite3
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Generator, Mapping, MutableMapping
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import ThreadingHTTPServer
from typing import Any

from agent_wait.core import (
    ConfigError,
    DeadLetter,
    EntryPoint,
    Received,
    SqliteEntry,
    format_utc,
    log_safe,
    parse_message,
)
from agent_wait.core.transport import Poison, dead_letter, read_message, transport_headers
from agent_wait.webhook._errors import WebhookVerificationError
from agent_wait.webhook._options import WebhookEntryOptions
from agent_wait.webhook._server import Reply, Waiter, serve
from agent_wait.webhook._signing import (
    ID_HEADER,
    Secret,
    SigningKey,
    authentic,
)

logger = logging.getLogger("agent_wait.webhook.entry")

Scope = MutableMapping[str, Any]
ASGIReceive = Callable[[], Awaitable[MutableMapping[str, Any]]]
ASGISend = Callable[[MutableMapping[str, Any]], Awaitable[None]]

OUTBOX_TABLE = "agent_wait_webhook_outbox"
DEAD_TABLE = "agent_wait_webhook_dead"
MAX_BODY = 1024 * 1024


def _positive(name: str, value: object, *, integer: bool = False, zero: bool = False) -> None:
    kinds = int if integer else int | float
    ok = not isinstance(value, bool) and isinstance(value, kinds)
    if not ok or not (value >= 0 if zero else value > 0):  # pyright: ignore[reportOperatorIssue]
        expected = "a positive whole number" if integer else "seconds"
        bound = " >= 0" if zero else " > 0"
        raise ConfigError(f"{name}: expected {expected}{bound}, got {value!r}")


def _asyncio_waiter() -> tuple[Waiter, asyncio.Future[Reply]]:
    loop = asyncio.get_running_loop()
    future: asyncio.Future[Reply] = loop.create_future()

    def answer(status: int, body: dict[str, Any]) -> None:
        def settle() -> None:
            if not future.done():
                future.set_result((status, body))

        # A closed loop means the server is gone: the sender saw no answer and retries.
        with suppress(RuntimeError):
            loop.call_soon_threadsafe(settle)

    return answer, future


@dataclass(slots=True)
class _Held:
    id: str
    thread_id: str
    message: dict[str, Any]
    seq: int
    attempts: int = 0
    receipt: str | None = None
    lease_until: float = 0.0
    visible_at: float = 0.0
    error: str | None = None
    waiters: list[Waiter] = field(default_factory=list[Waiter])


class WebhookEntry(EntryPoint):
    """Messages for the host arrive as HTTP POSTs, held until the host settled them.

    Args:
        url: Where :meth:`send` POSTs (the host's endpoint). Default: the built-in server's
            own address when ``listen`` is set (a host sending to itself).
        listen: ``"host:port"`` to serve from this object (the standard library's threading
            HTTP server, a thread per held request); without it, mount :attr:`app` (ASGI) in
            your own server.
        secret: Standard Webhooks secret: :meth:`send` signs with it and the app refuses
            requests without a valid signature (HTTP 400). ``secret_env`` names a variable
            holding it.
        path: The database file of the outbox and of the host's dead letters (default: the
            inbox's file).
        visibility_timeout: Seconds a received message stays leased to its receiver.
        max_attempts: Deliveries to the host before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again.
        linger: Seconds :meth:`receive` waits after the first message for others arriving with it.
        delivery_timeout: Seconds :meth:`send`'s delivery waits for the host's answer to one POST.
        delivery_attempts: POSTs of one message before the outbox dead-letters it.
        delivery_retry_delay: Seconds between those POSTs.
        max_in_flight: POSTs the delivery thread keeps open at once (one per thread at most).
        flush_timeout: Seconds :meth:`close` waits for messages still in the outbox.
        read_timeout: Seconds the built-in server gives a request to arrive in full (request
            line, headers and body), an idle connection to send its next one and a reply to be
            taken; then it closes the connection.
        max_connections: Connections the built-in server serves at once (each held request
            keeps one); the next are answered 503, which senders retry.
    """

    name = "webhook"
    options_model = WebhookEntryOptions

    def __init__(
        self,
        url: str | None = None,
        *,
        listen: str | None = None,
        secret: Secret | None = None,
        path: str | None = None,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
        linger: float = 0.0,
        delivery_timeout: float = 900.0,
        delivery_attempts: int = 10,
        delivery_retry_delay: float = 5.0,
        max_in_flight: int = 16,
        flush_timeout: float = 30.0,
        read_timeout: float = 30.0,
        max_connections: int = 256,
    ) -> None:
        options = WebhookEntryOptions.parse(
            self.name,
            {
                "url": url,
                "listen": listen,
                "secret": secret,
                "path": path,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
                "linger": linger,
                "delivery_timeout": delivery_timeout,
                "delivery_attempts": delivery_attempts,
                "delivery_retry_delay": delivery_retry_delay,
                "max_in_flight": max_in_flight,
                "flush_timeout": flush_timeout,
                "read_timeout": read_timeout,
                "max_connections": max_connections,
            },
        )
        bind = None if listen is None else _parse_listen(listen)
        self.url = url
        self.visibility_timeout = float(options.visibility_timeout)
        self.max_attempts = options.max_attempts
        self.retry_delay = float(options.retry_delay)
        self.linger = float(options.linger)
        self.delivery_timeout = float(options.delivery_timeout)
        self.flush_timeout = float(options.flush_timeout)
        self._key = None if secret is None else SigningKey(secret, "secret")
        self._secret = secret
        # The outbox's file also holds the host's dead letters.
        self._outbox = SqliteEntry(
            path,
            table=OUTBOX_TABLE,
            visibility_timeout=self.delivery_timeout + 60.0,
            max_attempts=options.delivery_attempts,
            retry_delay=float(options.delivery_retry_delay),
        )
        self._dead_path = self._outbox.path
        self._dead_path.parent.mkdir(parents=True, exist_ok=True)
        with self._dead() as connection:
            connection.execute(
                f'CREATE TABLE IF NOT EXISTS "{DEAD_TABLE}" (id TEXT PRIMARY KEY, '
                "thread_id TEXT NOT NULL, body TEXT NOT NULL, attempts INTEGER NOT NULL, "
                "error TEXT NOT NULL, dead_at TEXT NOT NULL)"
            )
        self._cond = threading.Condition()
        self._held: dict[str, _Held] = {}
        self._seq = 0
        self._closed = False
        # What this object sent that the outbox still holds (by content: the outbox has no ids
        # for the sender), so flush() does not wait for what other senders left there.
        self._unsettled: Counter[str] = Counter()
        # The plugins' headers (a trace context) of each unsettled message, by _key.
        self._sent_headers: dict[str, dict[str, str]] = {}
        self._server: ThreadingHTTPServer | None = None
        self._server_thread: threading.Thread | None = None
        self._delivery: threading.Thread | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._client: Any = None  # an httpx.Client, made by the first POST
        self._max_in_flight = options.max_in_flight
        self._read_timeout = float(options.read_timeout)
        self._max_connections = options.max_connections
        self._wake = threading.Event()
        if bind is not None:
            self._serve(*bind)
        if url is not None:
            # At once: it also delivers what an earlier sender left in the outbox.
            self._start_delivery()

    def _start_delivery(self) -> None:
        with self._cond:
            if self._delivery is not None:
                return
            self._pool = ThreadPoolExecutor(
                self._max_in_flight, thread_name_prefix="agent-wait-webhook"
            )
            self._delivery = threading.Thread(
                target=self._deliver_loop, name="agent-wait-webhook-outbox", daemon=True
            )
            self._delivery.start()

    @property
    def target(self) -> str | None:
        """Where :meth:`send` POSTs: ``url``, else the built-in server's address."""
        if self.url is not None:
            return self.url
        address = self.address
        if address is None:
            return None
        return f"http://{address[0]}:{address[1]}/"

    # -- the consumer side: an outbox and its delivery thread -----------------------------

    def send(self, message: Mapping[str, Any]) -> None:
        """Put the message in the outbox; the delivery thread POSTs it until the host took it.

        Raises:
            pydantic.ValidationError: The message is malformed; nothing was sent.
            ConfigError: This entry point has no ``url`` to send to.
        """
        if self.target is None:
            raise ConfigError(
                "webhook entry point: neither url nor listen is set, so it cannot send"
            )
        # The plugins' headers are read in the sender's context, for the delivery thread, and
        # kept before the insert, as that thread may take the row at once. A message this
        # object did not send (another process's, redriven) goes without them.
        headers = transport_headers(parse_message(message))  # validates first
        key = _key(message)
        with self._cond:
            if headers:
                self._sent_headers[key] = dict(headers)
        try:
            self._outbox.send(message)
        except BaseException:
            with self._cond:
                if not self._unsettled[key]:
                    self._sent_headers.pop(key, None)
            raise
        with self._cond:
            self._unsettled[key] += 1
        self._start_delivery()
        self._wake.set()

    def _deliver_loop(self) -> None:
        in_flight: set[str] = set()
        lock = threading.Lock()
        while not self._closed:
            free = self._max_in_flight - len(in_flight)
            try:
                batch = self._outbox.receive(free, wait=0.0) if free > 0 else []
            except sqlite3.Error as error:  # a locked or busy file: the next poll tries again
                logger.warning("webhook entry point: reading the outbox failed (%s)", error)
                batch = []
            for item in batch:
                with lock:
                    in_flight.add(item.id)
                assert self._pool is not None

                def done(future: Future[None], item_id: str = item.id) -> None:
                    with lock:
                        in_flight.discard(item_id)
                    if not future.cancelled() and (error := future.exception()) is not None:
                        # The outbox lease runs out and the message is posted again.
                        logger.error(
                            "webhook entry point: delivering message %s failed (%s)",
                            item_id,
                            type(error).__name__,
                        )
                    self._wake.set()

                self._pool.submit(self._post, item).add_done_callback(done)
            if not batch:
                self._wake.wait(self._outbox.poll_interval)
                self._wake.clear()

    def _post(self, item: Received) -> None:
        import httpx

        body = json.dumps(item.message, ensure_ascii=False, separators=(",", ":")).encode()
        # Stable across retries of one outbox message, so the host counts them as one.
        msg_id = (
            "msg_"
            + hashlib.sha256(f"{self._dead_path}\0{item.id}\0".encode() + body).hexdigest()[:32]
        )
        with self._cond:
            sent = self._sent_headers.get(_key(item.message), {})
        # The plugins' headers first: they never replace one of ours.
        headers = {**sent, "content-type": "application/json", ID_HEADER: msg_id}
        if self._key is not None:
            headers.update(self._key.headers(msg_id, body))
        target = self.target
        assert target is not None
        with self._cond:
            if self._client is None:
                # One client for every POST: its connections are kept open, and a client
                # costs more to make (its TLS context) than a POST to a host nearby.
                self._client = httpx.Client(
                    timeout=self.delivery_timeout,
                    limits=httpx.Limits(max_connections=self._max_in_flight),
                )
            client: httpx.Client = self._client
        try:
            response = client.post(target, content=body, headers=headers)
        except httpx.HTTPError as error:
            outcome = f"{type(error).__name__}: {error}"
        else:
            if response.is_success:
                if self._outbox.ack(item):
                    self._settled(item)
                return
            outcome = f"HTTP {response.status_code} from {target}"
        logger.warning(
            "webhook entry point: message %s of thread %s not taken by the host (%s); "
            "attempt %d, kept in the outbox",
            item.id,
            log_safe(item.thread_id),
            outcome,
            item.attempt,
        )
        if self._outbox.fail(item, outcome):
            self._settled(item)

    def _settled(self, item: Received) -> None:
        with self._cond:
            key = _key(item.message)
            if self._unsettled[key] > 0:
                self._unsettled[key] -= 1
                if not self._unsettled[key]:
                    del self._unsettled[key]
                    self._sent_headers.pop(key, None)
            self._cond.notify_all()

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until every message this object sent was taken by the host (or dead-lettered).

        Returns False if some are still in the outbox after ``timeout`` seconds (default:
        ``flush_timeout``); they stay there and are delivered by the next entry point that
        opens the same outbox with a ``url``.
        """
        deadline = time.monotonic() + (self.flush_timeout if timeout is None else timeout)
        with self._cond:
            while self._unsettled.total():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._cond.wait(remaining)
        return True

    # -- the host side: an ASGI app holding each request -----------------------------------

    async def app(self, scope: Scope, receive: ASGIReceive, send: ASGISend) -> None:
        """The ASGI app receiving the POSTs: mount it in the host's ASGI server."""
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await _respond(send, 405, {"error": "POST a start message or an answer"})
            return
        body = bytearray()
        while True:
            event = await receive()
            if event["type"] == "http.disconnect":
                return
            body += event.get("body", b"")
            if len(body) > MAX_BODY:
                await _respond(send, 413, {"error": f"the body is larger than {MAX_BODY} bytes"})
                return
            if not event.get("more_body", False):
                break
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        waiter, future = _asyncio_waiter()
        status, answer = self._admit(bytes(body), headers, waiter) or await future
        await _respond(send, status, answer)

    def _admit(self, body: bytes, headers: Mapping[str, str], waiter: Waiter) -> Reply | None:
        """Verify and hold a request: its answer now, or None when ``waiter`` will get it."""
        headers = {k.lower(): v for k, v in headers.items()}
        try:
            if self._secret is not None:
                authentic(body, headers, self._secret)
        except WebhookVerificationError as error:
            return 401, {"error": str(error)}
        message = read_message(body)
        msg_id = headers.get(ID_HEADER) or "body_" + hashlib.sha256(body).hexdigest()[:32]
        if self._is_dead(msg_id):
            return 202, {"status": "dead-lettered", "id": msg_id}
        with self._cond:
            if self._closed:
                return 503, {"error": "the host is shutting down; send again"}
            if isinstance(message, Poison):
                # No host can handle it: kept at once, and the sender told so (no retries).
                self._keep_dead(msg_id, message.thread_id, body, 1, message.error)
                return 202, {"status": "dead-lettered", "id": msg_id, "error": message.error}
            held = self._held.get(msg_id)
            if held is None:
                self._seq += 1
                held = _Held(msg_id, message["thread_id"], message, self._seq)
                self._held[msg_id] = held
            # A sender that retried while the first request is still held: answer both.
            held.waiters.append(waiter)
            self._cond.notify_all()
        return None

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Lease up to ``max_messages`` held messages (the oldest of each thread).

        Waits up to ``wait`` seconds for the first, then ``linger`` seconds for more arriving
        with it.
        """
        _positive("max_messages", max_messages, integer=True)
        deadline = time.monotonic() + max(wait, 0.0)
        with self._cond:
            claimed = self._claim(max_messages)
            while not claimed and not self._closed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._cond.wait(min(remaining, self._next_change()))
                claimed = self._claim(max_messages)
            if claimed and self.linger and len(claimed) < max_messages:
                self._cond.wait(self.linger)
                claimed += self._claim(max_messages - len(claimed))
        return claimed

    def _next_change(self) -> float:
        now = time.time()
        moments = [h.lease_until if h.receipt else h.visible_at for h in self._held.values()]
        later = [m - now for m in moments if m > now]
        return max(min(later, default=1.0), 0.01)

    def _claim(self, limit: int) -> list[Received]:
        now = time.time()
        heads: dict[str, _Held] = {}
        for held in sorted(self._held.values(), key=lambda h: h.seq):
            if held.receipt is not None and held.lease_until <= now:
                held.receipt = None  # its lease ran out: the receiver died or was too slow
                if held.attempts >= self.max_attempts:
                    self._bury(
                        held,
                        held.error
                        or (
                            f"never acknowledged in {held.attempts} deliveries (the host "
                            f"took longer than visibility_timeout={self.visibility_timeout}s)"
                        ),
                    )
                    continue
            heads.setdefault(held.thread_id, held)
        claimed: list[Received] = []
        for held in heads.values():
            if len(claimed) >= limit:
                break
            if held.receipt is not None or held.visible_at > now:
                continue
            held.attempts += 1
            held.receipt = uuid.uuid4().hex
            held.lease_until = now + self.visibility_timeout
            claimed.append(
                Received(held.id, held.thread_id, held.message, held.attempts, held.receipt)
            )
        return claimed

    def _leased(self, received: Received) -> _Held | None:
        held = self._held.get(received.id)
        if held is None or held.receipt != received.receipt or held.lease_until <= time.time():
            logger.warning(
                "message %s of thread %s: its lease ran out before it was settled",
                log_safe(received.id),
                log_safe(received.thread_id),
            )
            return None
        return held

    def ack(self, received: Received) -> bool:
        """The host handled it: answer its request ``200``."""
        with self._cond:
            held = self._leased(received)
            if held is None:
                return False
            del self._held[held.id]
            self._cond.notify_all()
        for waiter in held.waiters:
            waiter(200, {"status": "handled", "id": held.id})
        return True

    def extend(self, received: Received) -> bool:
        """Lease the message for another ``visibility_timeout`` seconds."""
        with self._cond:
            held = self._leased(received)
            if held is not None:
                held.lease_until = time.time() + self.visibility_timeout
            return held is not None

    def release(self, received: Received) -> bool:
        """Hand the message out again at once, its attempt kept; False if its lease had run out.

        Its request stays held.
        """
        with self._cond:
            held = self._leased(received)
            if held is None:
                return False
            # Its lease runs out now: the next receive takes it back as a lapsed lease (and
            # dead-letters it if that was its last attempt).
            held.lease_until = time.time()
            self._cond.notify_all()
            return True

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after ``retry_delay``, or dead-letter it.

        A retried message's request stays held; a dead-lettered one's is answered ``202``.
        """
        with self._cond:
            held = self._leased(received)
            if held is None:
                return False
            if retry and held.attempts < self.max_attempts:
                held.receipt, held.error = None, error
                held.visible_at = time.time() + self.retry_delay
                self._cond.notify_all()
                return False
            self._bury(held, error)
            return True

    def _bury(self, held: _Held, error: str) -> None:
        """Keep ``held`` in the dead-letter table, then answer its request (lock held)."""
        body = json.dumps(held.message, ensure_ascii=False)
        self._keep_dead(held.id, held.thread_id, body, held.attempts, error)
        del self._held[held.id]
        self._cond.notify_all()
        for waiter in held.waiters:
            waiter(202, {"status": "dead-lettered", "id": held.id})

    def _keep_dead(
        self, msg_id: str, thread_id: str, body: str | bytes, attempts: int, error: str
    ) -> None:
        """Write a dead letter (a poison body as its bytes) and log it."""
        with self._dead() as connection:
            connection.execute(
                f'INSERT OR REPLACE INTO "{DEAD_TABLE}" VALUES (?, ?, ?, ?, ?, ?)',
                (msg_id, thread_id, body, attempts, error, format_utc(datetime.now(UTC))),
            )
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in %s table %s",
            log_safe(msg_id),
            log_safe(thread_id),
            attempts,
            error.partition(":")[0],
            self._dead_path,
            DEAD_TABLE,
        )

    @contextmanager
    def _dead(self) -> Generator[sqlite3.Connection]:
        with closing(sqlite3.connect(self._dead_path, timeout=5.0)) as connection, connection:
            yield connection

    def _is_dead(self, msg_id: str) -> bool:
        with self._dead() as connection:
            row = connection.execute(
                f'SELECT 1 FROM "{DEAD_TABLE}" WHERE id = ?', (msg_id,)
            ).fetchone()
        return row is not None

    def dead_letters(self) -> list[DeadLetter]:
        """The host's dead letters, then the outbox's (messages the host never took)."""
        with self._dead() as connection:
            rows = connection.execute(
                f"SELECT id, thread_id, CAST(body AS BLOB), attempts, error, dead_at FROM "
                f'"{DEAD_TABLE}" ORDER BY dead_at, id'
            ).fetchall()
        host = [dead_letter(i, t, b, a, e, d) for i, t, b, a, e, d in rows]
        outbox = [
            DeadLetter(f"outbox-{d.id}", d.thread_id, d.message, d.attempts, d.error, d.dead_at)
            for d in self._outbox.dead_letters()
        ]
        return host + outbox

    def redrive(self, message_id: str) -> bool:
        """Put a dead letter back; False if there is no such dead letter.

        A host's comes back as a new message (its request was answered already); an outbox's
        (``outbox-<n>``) goes back into the outbox to be posted again. A poison message is read
        again and, unless this host can read it now, dead-lettered again at once.
        """
        if message_id.startswith("outbox-"):
            return self._outbox.redrive(message_id.removeprefix("outbox-"))
        with self._cond:
            with self._dead() as connection:
                row = connection.execute(
                    f'DELETE FROM "{DEAD_TABLE}" WHERE id = ? RETURNING thread_id, '
                    "CAST(body AS BLOB)",
                    (message_id,),
                ).fetchone()
            if row is None:
                return False
            message = read_message(row[1])
            if isinstance(message, Poison):
                self._keep_dead(message_id, row[0], row[1], 1, message.error)
                return True
            self._seq += 1
            self._held[message_id] = _Held(message_id, row[0], message, self._seq)
            self._cond.notify_all()
        return True

    # -- serving and closing ---------------------------------------------------------------

    def _serve(self, host: str, port: int) -> None:
        try:
            self._server, self._server_thread = serve(
                host,
                port,
                self._admit,
                max_body=MAX_BODY,
                read_timeout=self._read_timeout,
                max_connections=self._max_connections,
            )
        except OSError as error:
            raise ConfigError(f"listen: cannot serve on {host}:{port}: {error}") from None

    def describe(self) -> dict[str, Any]:
        """``url``: where consumers post (the secret stays in their own configuration).

        Raises:
            ConfigError: There is no ``url`` and no built-in server to name.
        """
        if self.target is None:
            raise ConfigError("webhook entry point: reply_to needs url (or listen) to publish")
        return {"url": self.target}

    @property
    def address(self) -> tuple[str, int] | None:
        """``(host, port)`` the built-in server listens on (``listen`` with port 0 picks one)."""
        if self._server is None:
            return None
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def close(self) -> None:
        """Flush the outbox (up to ``flush_timeout``), answer held requests ``503``, stop."""
        if self._closed:
            return
        if self._delivery is not None and not self.flush():
            logger.warning(
                "webhook entry point: %d sent messages not yet taken by the host; kept in the "
                "outbox %s for the next sender",
                self._unsettled.total(),
                self._dead_path,
            )
        with self._cond:
            self._closed = True
            held = list(self._held.values())
            self._held.clear()
            self._cond.notify_all()
        for item in held:
            for waiter in item.waiters:
                waiter(503, {"error": "the host is shutting down; send again"})
        self._wake.set()
        if self._delivery is not None:
            self._delivery.join(5)
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        if self._server is not None and self._server_thread is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server_thread.join(10)
        if self._client is not None:
            self._client.close()
        self._outbox.close()

    def __repr__(self) -> str:
        return f"<WebhookEntry {self.name!r} url={self.url!r}>"


def _key(message: Mapping[str, Any]) -> str:
    return json.dumps(message, sort_keys=True, ensure_ascii=False)


def _parse_listen(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"listen: expected 'host:port' such as '0.0.0.0:8080', got {listen!r}")
    return host.strip("[]") or "0.0.0.0", int(port)


async def _respond(send: ASGISend, status: int, body: dict[str, Any]) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(data)),
            ],
        }
    )
    await send({"type": "http.response.body", "body": data})
