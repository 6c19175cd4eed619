"""An announcer over an SDK with its own network thread: pika's callback-driven SelectConnection.

The broker acknowledges each publish later (publisher confirms), on the SDK's thread. Every
touch of the connection, the channel and the pending acknowledgements happens on that thread,
so no lock guards them; deliver() hands work over with add_callback_threadsafe and waits on a
concurrent.futures.Future the acknowledgement resolves. Run the kit against a local RabbitMQ:
``pytest docs/examples/plugin_callback_sdk.py``.
"""

from __future__ import annotations

import asyncio
import json
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from typing import Any

import pika
import pytest
from pika.adapters.select_connection import SelectConnection

from agent_wait.core import AnnouncerOptions, BaseAnnounce, WaitEnvelope
from agent_wait.core.options import Seconds, SensitiveUrl, Text, redact
from agent_wait.testing import AnnouncerContract

AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"


class ConfirmedQueueOptions(AnnouncerOptions):
    """What configuration may set: one field per constructor argument."""

    url: SensitiveUrl
    queue: Text
    timeout: Seconds = 5.0


class ConfirmedQueueAnnounce(BaseAnnounce):
    """Publishes each envelope to a queue and returns once the broker has confirmed it."""

    name = "confirmed_queue"
    options_model = ConfirmedQueueOptions

    def __init__(self, url: str, queue: str, *, timeout: float = 5.0) -> None:
        options = ConfirmedQueueOptions.parse(
            self.name, {"url": url, "queue": queue, "timeout": timeout}
        )
        self.url, self.queue, self.timeout = options.url, options.queue, options.timeout
        self._start = threading.Lock()  # guards only starting the thread, never a callback
        self._thread: threading.Thread | None = None
        self._opened: Future[None] = Future()
        self._connection: SelectConnection | None = None
        self._channel: Any = None
        # Network thread only: delivery tag -> the future its acknowledgement resolves.
        self._pending: dict[int, Future[None]] = {}
        self._tag = 0

    # -- the caller's side ----------------------------------------------------------------

    def deliver(self, envelope: WaitEnvelope) -> None:
        self._submit(envelope).result(timeout=self.timeout)

    async def adeliver(self, envelope: WaitEnvelope) -> None:
        # The network thread resolves a concurrent future; wrap_future bridges it to the loop.
        await asyncio.wait_for(asyncio.wrap_future(self._submit(envelope)), self.timeout)

    def _submit(self, envelope: WaitEnvelope) -> Future[None]:
        connection = self._connected()
        acked: Future[None] = Future()
        body = envelope.to_json()
        connection.ioloop.add_callback_threadsafe(lambda: self._publish(body, acked))
        return acked

    def _connected(self) -> SelectConnection:
        with self._start:  # released before waiting: the open callback needs no lock
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True)
                self._thread.start()
        try:
            self._opened.result(timeout=self.timeout)
        except TimeoutError:
            raise TimeoutError(
                f"{redact(self.url)}: not connected within {self.timeout} s"
            ) from None
        assert self._connection is not None
        return self._connection

    def close(self) -> None:
        connection, thread = self._connection, self._thread
        if connection is None or thread is None or not thread.is_alive():
            return
        connection.ioloop.add_callback_threadsafe(self._shutdown)
        thread.join(timeout=self.timeout)

    # -- the network thread ---------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._connection = SelectConnection(
                pika.URLParameters(self.url),
                on_open_callback=lambda c: c.channel(on_open_callback=self._on_channel),
                on_open_error_callback=lambda _c, error: self._fail(error),
                on_close_callback=lambda _c, reason: self._fail(reason),
            )
        except Exception as error:  # noqa: BLE001 - reported to every waiting deliver()
            self._fail(error)
            return
        self._connection.ioloop.start()  # returns once _fail or _shutdown stops it

    def _on_channel(self, channel: Any) -> None:
        self._channel = channel
        channel.confirm_delivery(
            self._on_confirm, callback=lambda _frame: self._opened.set_result(None)
        )

    def _publish(self, body: bytes, acked: Future[None]) -> None:
        if self._channel is None or not self._channel.is_open:
            acked.set_exception(ConnectionError(f"{redact(self.url)}: channel closed"))
            return
        self._tag += 1  # confirms number the channel's publishes 1, 2, 3...
        self._pending[self._tag] = acked  # registered before the publish: no early ack is lost
        self._channel.basic_publish(
            "", self.queue, body, pika.BasicProperties(content_type="application/json")
        )

    def _on_confirm(self, frame: Any) -> None:
        method = frame.method
        tags = (
            [t for t in self._pending if t <= method.delivery_tag]
            if method.multiple
            else [method.delivery_tag]
        )
        refused = isinstance(method, pika.spec.Basic.Nack)
        for tag in tags:
            future = self._pending.pop(tag, None)
            if future is None:
                continue
            if refused:
                future.set_exception(RuntimeError(f"the broker refused message {tag}"))
            else:
                future.set_result(None)

    def _fail(self, reason: object) -> None:
        error = ConnectionError(f"{redact(self.url)}: {reason}")
        if not self._opened.done():
            self._opened.set_exception(error)
        for future in self._pending.values():  # nobody waits forever for a lost acknowledgement
            future.set_exception(error)
        self._pending.clear()
        if self._connection is not None:
            self._connection.ioloop.stop()

    def _shutdown(self) -> None:
        assert self._connection is not None
        if self._connection.is_open:
            self._connection.close()  # on_close_callback then fails what is pending and stops
        else:
            self._connection.ioloop.stop()


class TestConfirmedQueueAnnounce(AnnouncerContract):
    @pytest.fixture(autouse=True)
    def _queue(self) -> Iterator[None]:
        self.queue = f"questions-{uuid.uuid4().hex}"
        with pika.BlockingConnection(pika.URLParameters(AMQP_URL)) as connection:
            connection.channel().queue_declare(self.queue)
            yield
            connection.channel().queue_delete(self.queue)

    def make_announcer(self) -> BaseAnnounce:
        return ConfirmedQueueAnnounce(AMQP_URL, self.queue)

    def make_failing_announcer(self) -> BaseAnnounce:
        return ConfirmedQueueAnnounce("amqp://guest:guest@127.0.0.1:1/", self.queue, timeout=2)

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]]:
        # A queue keeps what it got: read it back (and requeue) with a client of our own.
        bodies = []
        with pika.BlockingConnection(pika.URLParameters(AMQP_URL)) as connection:
            channel = connection.channel()
            while True:
                method, _properties, body = channel.basic_get(self.queue)
                if method is None:
                    break
                bodies.append(json.loads(body))
            channel.basic_recover(requeue=True)
        return bodies
