"""The rabbitmq entry point with ``shards``: hosts share the shards, each thread stays in order."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pika
import pytest

from agent_wait.core import EntryPoint, entry
from agent_wait.rabbitmq import RabbitMqEntry
from agent_wait.testing import EntryContract

SHARDS = 4

# A host in a process of its own, so it can be killed: it receives and never settles, and
# prints what it holds.
HOST = """
import json, sys
from agent_wait.rabbitmq import RabbitMqEntry
host = RabbitMqEntry(sys.argv[1], queue=sys.argv[2], shards=int(sys.argv[3]))
while True:
    for received in host.receive(10, wait=0.2):
        print(json.dumps(["got", received.message["question_id"]]), flush=True)
    print(json.dumps(["consuming", host.consuming()]), flush=True)
"""


def _drop(url: str, queue: str, shards: int) -> None:
    connection = pika.BlockingConnection(pika.URLParameters(url))
    channel = connection.channel()
    for name in [f"{queue}.{n}" for n in range(shards)] + [f"{queue}.hosts", f"{queue}.dead"]:
        channel.queue_delete(name)
    channel.exchange_delete(f"{queue}.dead")
    connection.close()


@pytest.fixture
def queue(amqp_url: str) -> Iterator[str]:
    name = f"agent-wait-test-shards-{uuid.uuid4().hex[:12]}"
    yield name
    _drop(amqp_url, name, SHARDS)


def _until(condition: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.05)


class TestShardedRabbitMqEntry(EntryContract):
    """The conformance kit with the messages spread over three shards."""

    @pytest.fixture(autouse=True)
    def _broker(self, amqp_url: str) -> Iterator[None]:
        self.url = amqp_url
        self.queues: list[str] = []
        yield
        for name in self.queues:
            _drop(amqp_url, name, 3)

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        name = f"agent-wait-test-shards-{uuid.uuid4().hex[:12]}"
        self.queues.append(name)
        return RabbitMqEntry(
            self.url,
            queue=name,
            shards=3,
            visibility_timeout=visibility_timeout,
            max_attempts=max_attempts,
            retry_delay=retry_delay,
        )

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        assert isinstance(entry, RabbitMqEntry)
        entry.dead_letters()  # declares the queues
        connection = pika.BlockingConnection(pika.URLParameters(self.url))
        channel = connection.channel()
        channel.confirm_delivery()
        channel.basic_publish(
            "", entry.route(thread_id), body, pika.BasicProperties(delivery_mode=2)
        )
        connection.close()


def test_two_hosts_share_the_shards_and_keep_each_thread_in_order(
    amqp_url: str, queue: str
) -> None:
    hosts = [RabbitMqEntry(amqp_url, queue=queue, shards=SHARDS) for _ in range(2)]
    handled: list[tuple[int, str, int]] = []
    lock = threading.Lock()
    stop = threading.Event()

    def work(index: int) -> None:
        host = hosts[index]
        while not stop.is_set():
            for received in host.receive(10, wait=0.1):
                with lock:
                    handled.append((index, received.thread_id, received.message["answer"]))
                assert host.ack(received)

    workers = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for worker in workers:
        worker.start()
    try:
        # Whoever subscribed first took every shard; it gives two back to the other.
        _until(
            lambda: [len(host.consuming()) for host in hosts] == [2, 2],
            "each host consumes two shards",
        )
        assert sorted(hosts[0].consuming() + hosts[1].consuming()) == [
            f"{queue}.{n}" for n in range(SHARDS)
        ]
        threads = [f"t-{n}" for n in range(30)]
        assert {hosts[0].route(t) for t in threads} == {f"{queue}.{n}" for n in range(SHARDS)}
        sender = RabbitMqEntry(amqp_url, queue=queue, shards=SHARDS)
        for step in range(5):
            for thread_id in threads:
                sender.send({"thread_id": thread_id, "question_id": f"q{step}", "answer": step})
        sender.close()
        _until(lambda: len(handled) >= len(threads) * 5, "every message was handled")
    finally:
        stop.set()
        for worker in workers:
            worker.join()
        for host in hosts:
            host.close()
    assert Counter((t, step) for _, t, step in handled).most_common(1)[0][1] == 1
    for thread_id in threads:
        assert [step for _, t, step in handled if t == thread_id] == [0, 1, 2, 3, 4]
        # A thread's shard stayed with one host: its messages never moved mid-thread.
        assert len({index for index, t, _ in handled if t == thread_id}) == 1
    assert {index for index, _, _ in handled} == {0, 1}, "one host did all the work"


def test_a_killed_hosts_shards_are_taken_over_in_order(amqp_url: str, queue: str) -> None:
    process = subprocess.Popen(
        [sys.executable, "-c", HOST, amqp_url, queue, str(SHARDS)],
        stdout=subprocess.PIPE,
        text=True,
    )
    lines: list[Any] = []
    reader = threading.Thread(
        target=lambda: lines.extend(json.loads(line) for line in process.stdout or ())
    )
    reader.start()
    survivor = RabbitMqEntry(amqp_url, queue=queue, shards=SHARDS)
    try:
        everything = [f"{queue}.{n}" for n in range(SHARDS)]
        _until(lambda: ["consuming", everything] in lines, "the first host took every shard")
        threads = [f"t-{n}" for n in range(12)]
        assert {survivor.route(t) for t in threads} == set(everything)
        for step in range(2):
            for thread_id in threads:
                survivor.send(
                    {"thread_id": thread_id, "question_id": f"{thread_id}/q{step}", "answer": 1}
                )
        first = sorted(f"{t}/q0" for t in threads)
        _until(
            lambda: sorted(line[1] for line in lines if line[0] == "got") == first,
            "the first host holds the first message of every thread",
        )
        # The survivor joins: its share is two shards, but nothing of them is free.
        assert survivor.receive(10, wait=1.5) == []
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        got: list[tuple[str, int]] = []

        def drained() -> bool:
            for received in survivor.receive(20, wait=0.1):
                got.append((received.message["question_id"], received.attempt))
                assert survivor.ack(received)
            return len(got) >= len(threads) * 2

        _until(drained, "the survivor handled every message")
        assert survivor.consuming() == everything
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
        reader.join()
        survivor.close()
    assert Counter(question for question, _ in got).most_common(1)[0][1] == 1
    for thread_id in threads:
        mine = [(q, attempt) for q, attempt in got if q.startswith(f"{thread_id}/")]
        # The first was handed out by the killed host, which never settled it: the second
        # attempt. The next came after it (attempt 2 if the broker had sent it there too).
        assert [q for q, _ in mine] == [f"{thread_id}/q0", f"{thread_id}/q1"]
        assert mine[0][1] == 2
        assert mine[1][1] in (1, 2)


def test_an_answer_finds_its_threads_shard_through_reply_to(amqp_url: str, queue: str) -> None:
    with RabbitMqEntry(amqp_url.replace("guest:guest@", ""), queue=queue, shards=SHARDS) as host:
        described = host.reply_to()
        assert described["shards"] == SHARDS
        options = dict(described)
        options.pop("use")
        sender = entry("rabbitmq", **options)
        assert isinstance(sender, RabbitMqEntry)
        assert sender.route("order-4471") == host.route("order-4471") != queue


def test_a_shard_held_by_another_connection_is_left_to_it(amqp_url: str, queue: str) -> None:
    everything = [f"{queue}.{n}" for n in range(SHARDS)]
    holder = pika.BlockingConnection(pika.URLParameters(amqp_url))
    with RabbitMqEntry(amqp_url, queue=queue, shards=SHARDS) as host:
        host.dead_letters()  # declares the shards
        # Held, and nobody consumes it yet: a claim must still be refused.
        holder.channel().queue_declare(f"{queue}.0.owner", exclusive=True)
        assert host.receive(wait=0) == []
        assert host.consuming() == everything[1:]
        holder.close()  # as a killed host's connection closes: the shard is free
        _until(
            lambda: host.receive(wait=0) == [] and host.consuming() == everything,
            "the host took the freed shard",
        )
