"""Benchmark 15: answer to resume, per entry point, as a person feels it.

A LangGraph host (``agent_wait.langgraph.serve``, its defaults) serves each entry point in a
thread of this process; runs parked on a question are answered with ``answer()`` one at a time,
and the time runs from the call to ``answer()`` to the parked node's body running again. After
the answers the host is left idle and what it costs then is measured: the process's CPU time
per second, and for the ``sqlite`` entry point the polls per second.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_wait.core import EntryPoint, SqliteAnnounce, SqliteEntry, SqliteQuestionStore, WaitPolicy
from agent_wait.core._entry import Received

TITLE = (
    "15. answer to resume: answer() to the parked node's body running (LangGraph host, "
    "its defaults), per entry point"
)
# Seconds, p50: what a person notices after a click; sqlite polls, the servers push.
TARGETS = {"sqlite": 0.060}
NETWORK_TARGET = 0.020
IDLE_POLLS_PER_SECOND = 2.0
POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
NATS_URL = "nats://127.0.0.1:4222"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"
WEBHOOK_SECRET = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"


class CountingSqliteEntry(SqliteEntry):
    """The sqlite entry point, counting its polls (each is one claim transaction)."""

    polls = 0

    def _claim(self, limit: int) -> list[Received]:
        self.polls += 1
        return super()._claim(limit)


@dataclass
class Transport:
    """One entry point: the host's receiving instance and the answering side's sending one."""

    name: str
    host: EntryPoint
    sender: EntryPoint
    cleanup: list[Callable[[], None]] = field(default_factory=list)


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(fraction * len(ordered)) - 1)]


@contextlib.contextmanager
def transports(directory: Path) -> Iterator[Iterator[Transport | tuple[str, str]]]:
    """Each entry point that can be set up here, or (name, why not) for one that cannot."""
    made: list[Transport] = []

    def each() -> Iterator[Transport | tuple[str, str]]:
        for name, make in MAKERS.items():
            try:
                transport = make(directory)
            except Exception as error:  # a missing server skips its row, saying why
                yield name, f"{type(error).__name__}: {error}"[:200]
                continue
            made.append(transport)
            yield transport

    try:
        yield each()
    finally:
        for transport in made:
            for step in transport.cleanup:
                with contextlib.suppress(Exception):
                    step()


def _sqlite(directory: Path) -> Transport:
    path = directory / "entry.sqlite3"
    return Transport("sqlite", CountingSqliteEntry(path), SqliteEntry(path))


def _postgres(directory: Path) -> Transport:
    import psycopg

    from agent_wait.postgres import PostgresEntry

    table = f"bench_latency_{uuid.uuid4().hex[:8]}"
    psycopg.connect(POSTGRES_URL, connect_timeout=3).close()

    def drop() -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as connection:
            connection.execute(f'DROP TABLE IF EXISTS "{table}"')  # pyright: ignore[reportArgumentType]

    host = PostgresEntry(POSTGRES_URL, table=table, channel=table)
    host.oldest_waiting()  # creates the table before two connections race to
    return Transport(
        "postgres", host, PostgresEntry(POSTGRES_URL, table=table, channel=table), [drop]
    )


def _redis(directory: Path) -> Transport:
    import redis

    from agent_wait.redis import RedisEntry

    stream = f"bench-latency-{uuid.uuid4().hex[:8]}"
    client = redis.Redis.from_url(REDIS_URL, socket_connect_timeout=3)
    client.ping()

    def delete() -> None:
        keys = list(client.scan_iter(f"{stream}*"))  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
        if keys:
            client.delete(*keys)  # pyright: ignore[reportUnknownArgumentType]

    return Transport(
        "redis",
        RedisEntry(REDIS_URL, stream=stream),
        RedisEntry(REDIS_URL, stream=stream),
        [delete],
    )


def _nats(directory: Path) -> Transport:
    import nats

    from agent_wait.nats import NatsEntry

    stream = f"BENCH_LATENCY_{uuid.uuid4().hex[:8].upper()}"
    subject = f"awbench.{uuid.uuid4().hex[:8]}"

    async def delete() -> None:
        client = await nats.connect(NATS_URL, connect_timeout=3, max_reconnect_attempts=1)
        try:
            js = client.jetstream()
            for made in (stream, f"{stream}_DEAD", f"KV_{stream}_ATTEMPTS"):
                with contextlib.suppress(Exception):
                    await js.delete_stream(made)
        finally:
            await client.close()

    host = NatsEntry(NATS_URL, stream=stream, subject=subject)
    host.oldest_waiting()  # connects and creates the stream, or raises
    return Transport(
        "nats",
        host,
        NatsEntry(NATS_URL, stream=stream, subject=subject),
        [lambda: asyncio.run(delete())],
    )


def _rabbitmq(directory: Path) -> Transport:
    import pika

    from agent_wait.rabbitmq import RabbitMqEntry

    queue = f"bench-latency-{uuid.uuid4().hex[:8]}"
    pika.BlockingConnection(pika.URLParameters(AMQP_URL)).close()

    def delete() -> None:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        channel.queue_delete(queue)
        channel.queue_delete(f"{queue}.dead")
        channel.exchange_delete(f"{queue}.dead")
        connection.close()

    return Transport(
        "rabbitmq",
        RabbitMqEntry(AMQP_URL, queue=queue),
        RabbitMqEntry(AMQP_URL, queue=queue),
        [delete],
    )


def _sqs(directory: Path) -> Transport:
    import boto3

    from agent_wait.sqs import SqsEntry
    from tests.aws_moto import CREDENTIALS, REGION, MotoServer

    server = MotoServer().acquire()
    try:
        sqs = boto3.Session(region_name=REGION, **CREDENTIALS).client(
            "sqs", endpoint_url=server.url
        )
        dead = sqs.create_queue(
            QueueName="bench-latency-dlq.fifo", Attributes={"FifoQueue": "true"}
        )["QueueUrl"]
        arn = sqs.get_queue_attributes(QueueUrl=dead, AttributeNames=["QueueArn"])
        redrive = {"deadLetterTargetArn": arn["Attributes"]["QueueArn"], "maxReceiveCount": "5"}
        url = sqs.create_queue(
            QueueName="bench-latency.fifo",
            Attributes={
                "FifoQueue": "true",
                "ContentBasedDeduplication": "true",
                "RedrivePolicy": json.dumps(redrive),
            },
        )["QueueUrl"]
        return Transport(
            "sqs (moto)", SqsEntry(url, client=sqs), SqsEntry(url, client=sqs), [server.release]
        )
    except BaseException:
        server.release()  # the transport was not made: nothing else stops the server
        raise


def _webhook(directory: Path) -> Transport:
    from agent_wait.webhook import WebhookEntry

    host = WebhookEntry(
        listen="127.0.0.1:0", secret=WEBHOOK_SECRET, path=str(directory / "webhook-host.sqlite3")
    )
    sender = WebhookEntry(
        host.target, secret=WEBHOOK_SECRET, path=str(directory / "webhook-outbox.sqlite3")
    )
    return Transport("webhook", host, sender)


MAKERS: dict[str, Callable[[Path], Transport]] = {
    "sqlite": _sqlite,
    "postgres": _postgres,
    "redis": _redis,
    "nats": _nats,
    "rabbitmq": _rabbitmq,
    "sqs (moto)": _sqs,
    "webhook": _webhook,
}


def measure(transport: Transport, directory: Path, answers: int, idle: float) -> dict[str, Any]:
    """Park ``answers`` runs, answer each in turn, then leave the host idle for ``idle`` s."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from agent_wait.host import answer
    from agent_wait.langgraph import serve, wait

    resumed: dict[str, float] = {}
    arrived = threading.Condition()

    @wait(WaitPolicy(timeout="P1D"))
    def issue_refund(order_id: str, amount: int) -> str:
        with arrived:
            resumed[order_id] = time.perf_counter()
            arrived.notify_all()
        return "refunded"

    builder: Any = StateGraph(dict)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    graph = builder.compile(checkpointer=InMemorySaver())
    path = directory / f"inbox-{uuid.uuid4().hex[:8]}.sqlite3"
    store, stop = SqliteQuestionStore(path), threading.Event()
    worker = threading.Thread(
        target=serve, args=(graph, transport.host, SqliteAnnounce(path)), kwargs={"stop": stop}
    )
    worker.start()
    latencies: list[float] = []
    calls: list[float] = []
    after: list[float] = []
    try:
        orders = [f"o-{index}" for index in range(answers + 1)]  # the first warms up
        for order in orders:
            transport.sender.send(
                {"thread_id": order, "input": {"order_id": order, "amount": 4100}}
            )
        deadline = time.monotonic() + 120
        while True:
            asked = {q.envelope.thread_id: q.envelope.question_id for q in store.open_questions()}
            if len(asked) == len(orders):
                break
            if time.monotonic() > deadline or not worker.is_alive():
                raise RuntimeError(f"the host parked {len(asked)} of {len(orders)} runs")
            time.sleep(0.05)
        for index, order in enumerate(orders):
            start = time.perf_counter()
            answer(
                asked[order],
                "approve",
                by="bench",
                thread_id=order,
                store=store,
                entry=transport.sender,
            )
            called = time.perf_counter() - start
            with arrived:
                if not arrived.wait_for(lambda order=order: order in resumed, 30):
                    raise RuntimeError(f"{transport.name}: the host did not resume {order}")
            if index:
                latencies.append(resumed[order] - start)
                calls.append(called)
                after.append(resumed[order] - start - called)
        # Idle: the host backs off (the sqlite poll reaches its idle pace within a second).
        time.sleep(1.5)
        counting = transport.host if isinstance(transport.host, CountingSqliteEntry) else None
        polls = 0 if counting is None else counting.polls
        cpu, started = time.process_time(), time.perf_counter()
        time.sleep(idle)
        idle_cpu = (time.process_time() - cpu) / (time.perf_counter() - started)
        idle_polls = (
            None if counting is None else (counting.polls - polls) / (time.perf_counter() - started)
        )
    finally:
        stop.set()
        worker.join(timeout=30)
        store.close()
        for entry in (transport.host, transport.sender):
            with contextlib.suppress(Exception):
                entry.close()
    target = TARGETS.get(transport.name, NETWORK_TARGET)
    p50 = statistics.median(latencies)
    row: dict[str, Any] = {
        "latency": True,
        "entry": transport.name,
        "answers": len(latencies),
        "p50_seconds": p50,
        "p95_seconds": _percentile(latencies, 0.95),
        "min_seconds": min(latencies),
        "max_seconds": max(latencies),
        "answer_call_p50_seconds": statistics.median(calls),
        "after_answer_p50_seconds": statistics.median(after),
        "after_answer_p95_seconds": _percentile(after, 0.95),
        "idle_cpu_seconds_per_second": idle_cpu,
        "target_p50_seconds": target,
        "passed": p50 <= target,
    }
    if idle_polls is not None:
        row["idle_polls_per_second"] = idle_polls
        row["passed"] = row["passed"] and idle_polls <= IDLE_POLLS_PER_SECOND
    return row


def answer_latency(answers: int = 200, idle: float = 4.0) -> dict[str, Any]:
    """Benchmark 15's fields (``Result``'s), one row per entry point."""
    rows: list[dict[str, Any]] = []
    with (
        tempfile.TemporaryDirectory(prefix="agent-wait-bench-") as tmp,
        transports(Path(tmp)) as each,
    ):
        for transport in each:
            if isinstance(transport, tuple):
                name, why = transport
                rows.append(
                    {"latency": True, "entry": name, "passed": None, "note": f"not measured: {why}"}
                )
                continue
            rows.append(measure(transport, Path(tmp), answers, idle))
    measured = [row for row in rows if row["passed"] is not None]
    worst = max(measured, key=lambda r: r["p50_seconds"] / r["target_p50_seconds"], default=None)
    summary = "; ".join(
        f"{row['entry']}: p50 {row['p50_seconds'] * 1e3:.1f} ms, p95 "
        f"{row['p95_seconds'] * 1e3:.1f} ms"
        + (
            f", idle {row['idle_polls_per_second']:.1f} polls/s"
            if "idle_polls_per_second" in row
            else ""
        )
        if row["passed"] is not None
        else f"{row['entry']}: {row['note']}"
        for row in rows
    )
    return {
        "name": "answer_latency",
        "title": TITLE,
        "raw": {"answers": answers, "idle_seconds": idle},
        "ratio": None if worst is None else worst["p50_seconds"] / worst["target_p50_seconds"],
        "target": (
            f"p50 <= {TARGETS['sqlite'] * 1e3:.0f} ms sqlite (idle <= "
            f"{IDLE_POLLS_PER_SECOND:.0f} polls/s), <= {NETWORK_TARGET * 1e3:.0f} ms each network "
            "entry point"
        ),
        "passed": None if not measured else all(row["passed"] for row in measured),
        "summary": summary,
        "rows": rows,
    }


def table_row(row: dict[str, Any]) -> str:
    """One entry point's line in the Markdown table."""
    if row["passed"] is None:
        return f"| &nbsp;&nbsp;{row['entry']} | {row['note']} | | | skipped |"
    idle = f"idle: {row['idle_cpu_seconds_per_second'] * 100:.1f}% of a CPU"
    if "idle_polls_per_second" in row:
        idle += f", {row['idle_polls_per_second']:.1f} polls/s"
    target = f"p50 <= {row['target_p50_seconds'] * 1e3:.0f} ms"
    if "idle_polls_per_second" in row:
        target += f", idle <= {IDLE_POLLS_PER_SECOND:.0f} polls/s"
    return (
        f"| &nbsp;&nbsp;{row['entry']} | p50 {row['p50_seconds'] * 1e3:.1f} ms, p95 "
        f"{row['p95_seconds'] * 1e3:.1f} ms over {row['answers']} answers (answer() itself "
        f"{row['answer_call_p50_seconds'] * 1e3:.1f} ms; from its return p50 "
        f"{row['after_answer_p50_seconds'] * 1e3:.1f} ms, p95 "
        f"{row['after_answer_p95_seconds'] * 1e3:.1f} ms); {idle} | "
        f"{row['p50_seconds'] / row['target_p50_seconds']:.2f} | {target} | "
        f"{'pass' if row['passed'] else '**MISS**'} |"
    )
