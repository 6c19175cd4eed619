"""The core entry-point conformance kit and the rabbitmq entry point's own behaviour, on RabbitMQ."""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Iterator

import pika
import pytest

from agent_wait.core import ConfigError, DeliveryFailed, EntryPoint, entry
from agent_wait.rabbitmq import RabbitMqEntry
from agent_wait.testing import EntryContract
from tests.entry_serving import check_serve_loop


def _drop(url: str, queue: str) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    channel.queue_delete(queue)
    channel.queue_delete(f"{queue}.dead")
    channel.exchange_delete(f"{queue}.dead")
    connection.close()


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    name = f"agent-wait-test-entry-{uuid.uuid4().hex[:12]}"
    yield name
    _drop(amqp_url, name)


class TestRabbitMqEntry(EntryContract):
    @pytest.fixture(autouse=True)
    def _nowhere(self, closed_port: int) -> None:
        self.closed_port = closed_port

    def make_unreachable_entry(self) -> EntryPoint:
        return RabbitMqEntry(
            f"amqp://guest:guest@127.0.0.1:{self.closed_port}/",
            queue="agent-wait-unreachable",
            timeout=1.0,
        )

    @pytest.fixture(autouse=True)
    def _broker(self, amqp_url: str) -> Iterator[None]:
        self.url = amqp_url
        self.queues: list[str] = []
        yield
        for name in self.queues:
            _drop(amqp_url, name)

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        name = f"agent-wait-test-entry-{uuid.uuid4().hex[:12]}"
        self.queues.append(name)
        return RabbitMqEntry(
            self.url,
            queue=name,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        # The queue carries no thread beside the body: thread_id has nowhere to go.
        assert isinstance(entry, RabbitMqEntry)
        entry.dead_letters()  # declares the queue
        connection = pika.BlockingConnection(pika.URLParameters(self.url))
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish("", entry.queue, body, pika.BasicProperties(delivery_mode=2))
        connection.close()


def test_a_closed_host_hands_its_messages_to_the_next_in_order(amqp_url: str, queue: str) -> None:
    first = entry("rabbitmq", url=amqp_url, queue=queue)
    second = entry("rabbitmq", url=amqp_url, queue=queue)
    try:
        assert isinstance(first, RabbitMqEntry)
        for n in range(3):
            first.send({"thread_id": "t-1", "question_id": f"q{n}", "answer": n})
        [head] = first.receive(10, wait=2.0)
        assert head.message["question_id"] == "q0"
        assert second.receive(10, wait=0.3) == [], "a second host got a message of the thread"
        assert first.ack(head)
        first.close()  # the host stops: what it held goes back to the queue, in order
        [following] = second.receive(10, wait=3.0)
        assert following.message["question_id"] == "q1"
        # A delivery to a host that closed counts, even one still waiting its turn there.
        assert following.attempt == 2
        assert second.ack(following)
        [last] = second.receive(10, wait=2.0)
        assert last.message["question_id"] == "q2"
        assert second.ack(last)
    finally:
        first.close()
        second.close()


def test_dead_letters_outlive_the_host_that_buried_them(amqp_url: str, queue: str) -> None:
    with RabbitMqEntry(amqp_url, queue=queue, max_attempts=1) as host:
        host.send({"thread_id": "t-1", "question_id": "q1", "answer": 1})
        [received] = host.receive(wait=2.0)
        assert host.fail(received, "RuntimeError: boom")
    with RabbitMqEntry(amqp_url, queue=queue, max_attempts=1) as later:
        [letter] = later.dead_letters()
        assert (letter.thread_id, letter.attempts, letter.error) == ("t-1", 1, "RuntimeError: boom")
        assert later.dead_letters() == [letter], "reading the dead letters removed them"
        assert not later.redrive("no-such-id")


def test_the_broker_dead_letters_what_crashing_consumers_never_settle(
    amqp_url: str, queue: str
) -> None:
    with RabbitMqEntry(amqp_url, queue=queue, max_attempts=2) as host:
        host.send({"thread_id": "t-1", "question_id": "q1", "answer": 1})
        # Consumers that die holding the message, before any agent-wait host sees it.
        for _ in range(3):
            connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
            channel = connection.channel()
            for method, _properties, _body in channel.consume(queue, inactivity_timeout=2.0):
                assert method is not None, "the message was not delivered"
                break
            connection.close()
        assert host.receive(wait=0.5) == []
        [letter] = host.dead_letters()
        assert (letter.thread_id, letter.message["question_id"]) == ("t-1", "q1")
        assert letter.error.startswith("delivery limit reached")
        assert letter.attempts == 3
        assert letter.dead_at.endswith("Z"), letter.dead_at
        assert host.redrive(letter.id)
        [again] = host.receive(wait=2.0)
        assert (again.message["question_id"], again.attempt) == ("q1", 1)
        assert host.ack(again)


@pytest.mark.parametrize(
    ("option", "value"),
    [("queue", ""), ("prefetch", 0), ("max_attempts", 0), ("retry_delay", -1), ("timeout", "soon")],
)
def test_bad_options_name_the_option_and_value(option: str, value: object) -> None:
    with pytest.raises(
        ConfigError,
        match=rf"entry point 'rabbitmq': option '{option}': .*\(got {re.escape(repr(value))}\)",
    ):
        entry("rabbitmq", **{option: value})


def test_a_misspelt_option_gets_a_close_match() -> None:
    with pytest.raises(
        ConfigError,
        match=r"entry point 'rabbitmq': unknown option 'prefech'; did you mean 'prefetch'\?",
    ):
        entry("rabbitmq", prefech=10)
    with pytest.raises(ConfigError, match=r"option 'url': .*\(got 'http://user:\*\*\*@h/'\)"):
        entry("rabbitmq", url="http://user:s3cret@h/")


def test_an_unreachable_broker_never_shows_the_password(closed_port: int) -> None:
    with (
        RabbitMqEntry(f"amqp://user:s3cret@127.0.0.1:{closed_port}/", timeout=1) as unreachable,
        pytest.raises(ConnectionError) as raised,
    ):
        unreachable.send({"thread_id": "t", "question_id": "q", "answer": 1})
    assert "s3cret" not in str(raised.value)
    assert "127.0.0.1" in str(raised.value)


def test_a_socket_lost_while_connecting_is_an_unreachable_broker(
    amqp_url: str, queue: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What pika raises when the broker closes the socket between the TCP connect and the AMQP
    # handshake: a restart hits that window only by chance, so it is injected once here.
    connect = pika.BlockingConnection
    attempts: list[object] = []

    def closed_while_connecting(parameters: pika.URLParameters) -> pika.BlockingConnection:
        attempts.append(parameters)
        if len(attempts) == 1:
            raise ValueError("Expected connected socket, but getpeername() failed")
        return connect(parameters)

    monkeypatch.setattr(pika, "BlockingConnection", closed_while_connecting)
    with RabbitMqEntry(amqp_url, queue=queue, timeout=2.0) as served:
        # A connection error, which a worker rides out, not a ValueError that stops it.
        with pytest.raises(ConnectionError, match=r"cannot reach RabbitMQ at .*: ValueError"):
            served.receive(1, wait=0.0)
        served.send({"thread_id": "t-1", "question_id": "q1", "answer": "approve"})
        [received] = served.receive(1, wait=10.0)
        assert received.message["question_id"] == "q1"
        assert served.ack(received)


def test_the_serve_loop_keeps_each_thread_in_order(amqp_url: str, queue: str) -> None:
    with RabbitMqEntry(amqp_url, queue=queue, max_attempts=2, retry_delay=0) as served:
        check_serve_loop(served)


def test_reply_to_refuses_the_url_credentials(amqp_url: str, queue: str) -> None:
    with RabbitMqEntry(amqp_url, queue=queue) as messages:
        if "@" in amqp_url:
            with pytest.raises(ConfigError, match="a password in the URL"):
                messages.reply_to()
        else:
            assert messages.reply_to() == {"use": "rabbitmq", "url": amqp_url, "queue": queue}


def _full_queue(url: str, queue: str) -> pika.adapters.blocking_connection.BlockingChannel:
    """A queue the broker refuses publishes to (nacks them) until its one message is taken."""
    channel = pika.BlockingConnection(pika.URLParameters(url)).channel()
    arguments = {"x-max-length": 1, "x-overflow": "reject-publish"}
    channel.queue_declare(queue, durable=True, arguments=arguments)
    channel.confirm_delivery()
    channel.basic_publish("", queue, b'{"thread_id": "t-0"}')
    return channel


def test_a_message_the_broker_keeps_nacking_fails_with_a_retryable_error(
    amqp_url: str, queue: str
) -> None:
    channel = _full_queue(amqp_url, queue)
    sender = RabbitMqEntry(amqp_url, queue=queue, declare=False, timeout=1.0)
    try:
        with pytest.raises(
            DeliveryFailed, match=f"nacked the message to queue '{queue}'"
        ) as caught:
            sender.send({"thread_id": "t-1", "question_id": "q1", "answer": "approve"})
        assert caught.value.retryable
        assert caught.value.code == "NACK"
        assert caught.value.attempts is not None
        assert caught.value.attempts > 1
    finally:
        sender.close()
        channel.connection.close()


def test_a_nacked_message_is_published_again_until_the_broker_takes_it(
    amqp_url: str, queue: str
) -> None:
    channel = _full_queue(amqp_url, queue)
    nacked = threading.Event()

    class _Nacks(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if "Nack'ed" in record.getMessage():
                nacked.set()

    watcher = _Nacks()
    logging.getLogger("pika.adapters.blocking_connection").addHandler(watcher)
    sender = RabbitMqEntry(amqp_url, queue=queue, declare=False, timeout=120.0)
    failures: list[BaseException] = []

    def send() -> None:
        try:
            sender.send({"thread_id": "t-1", "question_id": "q1", "answer": "approve"})
        except BaseException as error:  # the assertion below reports it
            failures.append(error)

    publishing = threading.Thread(target=send)
    publishing.start()
    try:
        assert nacked.wait(60), "the broker never nacked the publish to a full queue"
        method, _, _ = channel.basic_get(queue, auto_ack=True)  # room for one again
        assert method is not None
        publishing.join(120)
        assert not publishing.is_alive()
        assert failures == []
        method, _, body = channel.basic_get(queue, auto_ack=True)
        assert method is not None
        assert b'"question_id":"q1"' in body
    finally:
        logging.getLogger("pika.adapters.blocking_connection").removeHandler(watcher)
        publishing.join(120)
        sender.close()
        channel.connection.close()
