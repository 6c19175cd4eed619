"""Scale-out: parked LangGraph threads answered by W = 1 and W = 2 worker processes.

For each shared entry point (PostgreSQL, Redis, NATS, RabbitMQ, the embedded sqlite one), the
same parked threads (one sqlite checkpointer file and inbox, parked once and copied for every
run) are answered by one worker process, then by two. The answers are in the entry point
before the workers are told to start; the clock runs from that moment until every gated body
has run. Resumes per second and W2/W1 are reported per entry point; every body must have run
exactly once (its line in the effects file), and every thread must have finished.

``python tests/bench/scale_out.py worker SETTINGS_JSON`` is one worker: it prints ``ready``,
waits for a line on stdin, then serves until killed.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"
REDIS_URL = "redis://127.0.0.1:6379/0"
NATS_URL = "nats://127.0.0.1:4222"
AMQP_URL = "amqp://guest:guest@127.0.0.1:5672/"
RABBITMQ_SHARDS = 16
TARGET = 1.6
THREADS_ENV = "AGENT_WAIT_BENCH_SCALE_OUT_THREADS"
ENTRIES_ENV = "AGENT_WAIT_BENCH_SCALE_OUT_ENTRIES"
STATE_ENV = "AGENT_WAIT_BENCH_SCALE_OUT_STATE"
CONCURRENCY = 4  # serve()'s threads per worker
RUN_SECONDS = 900.0  # a run that takes longer has failed


class State(TypedDict, total=False):
    order_id: str
    result: Any


def checkpointer(checkpoints: str) -> Any:
    """A PostgreSQL checkpointer (for a ``postgresql://`` URL, on a pool) or a sqlite one."""
    if checkpoints.startswith("postgresql://"):
        from langgraph.checkpoint.postgres import PostgresSaver
        from psycopg.rows import dict_row
        from psycopg_pool import ConnectionPool

        pool = ConnectionPool(
            checkpoints,
            min_size=1,
            max_size=CONCURRENCY,
            open=True,
            kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        )
        return PostgresSaver(pool)  # pyright: ignore[reportArgumentType]
    from langgraph.checkpoint.sqlite import SqliteSaver

    # A long busy timeout: every worker writes the one checkpointer file.
    path = Path(checkpoints) / "checkpoints.sqlite3"
    return SqliteSaver(sqlite3.connect(path, timeout=120, check_same_thread=False))


def build(checkpoints: str, effects: str) -> Any:
    """The graph: one node calling a gated ``issue_refund`` whose body appends a line."""
    from langgraph.graph import START, StateGraph

    from agent_wait.core import WaitPolicy
    from agent_wait.langgraph import wait

    @wait(WaitPolicy(timeout="PT1H"))
    def issue_refund(order_id: str) -> str:
        # One write with O_APPEND: each run of the body is one whole line.
        descriptor = os.open(effects, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(descriptor, f"refund {order_id}\n".encode())
        finally:
            os.close(descriptor)
        return "refunded"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"])})
    builder.add_edge(START, "refund")
    return builder.compile(checkpointer=checkpointer(checkpoints))


def make_entry(use: str, options: dict[str, Any]) -> Any:
    """The entry point by class (the benchmarks run with plugin autoload off)."""
    if use == "postgres":
        from agent_wait.postgres import PostgresEntry

        return PostgresEntry(**options)
    if use == "redis":
        from agent_wait.redis import RedisEntry

        return RedisEntry(**options)
    if use == "nats":
        from agent_wait.nats import NatsEntry

        return NatsEntry(**options)
    if use == "rabbitmq":
        from agent_wait.rabbitmq import RabbitMqEntry

        return RabbitMqEntry(**options)
    from agent_wait.core import SqliteEntry

    return SqliteEntry(**options)


def worker(settings: dict[str, Any]) -> None:
    """One worker process: ready, then (after a line on stdin) serve until killed."""
    from agent_wait.core import MemoryAnnounce
    from agent_wait.langgraph import handle_message, serve

    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s", stream=sys.stderr)
    graph = build(settings["checkpoints"], settings["effects"])
    messages = make_entry(settings["use"], settings["options"])
    # Connected, and one thread of its own parked and resumed (lazy imports, first queries),
    # before the clock starts; its body writes nowhere.
    warm = build(settings["checkpoints"], os.devnull)
    asked = MemoryAnnounce()
    thread_id = f"warm-up-{os.getpid()}"
    handle_message(warm, {"thread_id": thread_id, "input": {"order_id": thread_id}}, asked)
    [envelope] = asked.envelopes
    handle_message(warm, _approve(envelope), asked)
    messages.dead_letters()
    print("ready", flush=True)
    sys.stdin.readline()
    serve(graph, messages, None, concurrency=CONCURRENCY, wait=0.2)


@dataclass
class Shared:
    """One entry point's options for a run, and how to remove what the run left."""

    options: dict[str, Any]
    cleanup: Callable[[], None]


def _postgres(tag: str, _: Path) -> Shared:
    import psycopg
    from psycopg import sql

    table = f"bench_scale_{tag}"

    def cleanup() -> None:
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP TABLE IF EXISTS {}").format(sql.Identifier(table)))

    options = {"url": POSTGRES_URL, "table": table, "channel": table, "poll_interval": 0.2}
    return Shared(options, cleanup)


def _redis(tag: str, _: Path) -> Shared:
    import redis

    stream = f"bench-scale:{tag}"

    def cleanup() -> None:
        client = redis.Redis.from_url(REDIS_URL)
        client.delete(stream, *client.keys(f"{stream}*"))
        client.close()

    return Shared({"url": REDIS_URL, "stream": stream, "poll_interval": 0.2}, cleanup)


def _nats(tag: str, _: Path) -> Shared:
    import asyncio

    import nats

    stream = f"BENCH_SCALE_{tag.upper()}"

    async def delete() -> None:
        client = await nats.connect(NATS_URL)
        try:
            jetstream = client.jetstream()
            for name in (stream, f"{stream}_DEAD"):
                with suppress(nats.js.errors.NotFoundError):
                    await jetstream.delete_stream(name)
            with suppress(nats.js.errors.NotFoundError):
                await jetstream.delete_key_value(f"{stream}_ATTEMPTS")
        finally:
            await client.close()

    options = {"url": NATS_URL, "stream": stream, "subject": f"bench-scale.{tag}"}
    return Shared(options, lambda: asyncio.run(delete()))


def _rabbitmq(tag: str, _: Path) -> Shared:
    import pika

    queue = f"bench-scale-{tag}"

    def cleanup() -> None:
        connection = pika.BlockingConnection(pika.URLParameters(AMQP_URL))
        channel = connection.channel()
        for n in range(RABBITMQ_SHARDS):
            channel.queue_delete(f"{queue}.{n}")
        for name in (f"{queue}.hosts", f"{queue}.dead"):
            channel.queue_delete(name)
        channel.exchange_delete(f"{queue}.dead")
        connection.close()

    return Shared({"url": AMQP_URL, "queue": queue, "shards": RABBITMQ_SHARDS}, cleanup)


def _sqlite(_: str, directory: Path) -> Shared:
    return Shared({"path": str(directory / "messages.sqlite3"), "timeout": 120.0}, lambda: None)


SHARED: dict[str, Callable[[str, Path], Shared]] = {
    "postgres": _postgres,
    "redis": _redis,
    "nats": _nats,
    "rabbitmq": _rabbitmq,
    "sqlite": _sqlite,
}


class SharedState:
    """Checkpoints and questions (with the execution ledger beside them) that every worker shares.

    In PostgreSQL (a schema per copy: the checkpointer's tables and the inbox table) when
    langgraph-checkpoint-postgres is installed and ``AGENT_WAIT_BENCH_SCALE_OUT_STATE`` is not
    ``sqlite``; else two sqlite files (checkpoints, inbox) in a directory per copy. Parked into
    once, copied for every run, dropped at the end.
    """

    def __init__(self, base: Path) -> None:
        self.base = base
        self.kind = os.environ.get(STATE_ENV, "postgres")
        if self.kind not in ("postgres", "sqlite"):
            raise ValueError(f"{STATE_ENV}: expected postgres or sqlite, got {self.kind!r}")
        if (
            self.kind == "postgres"
            and importlib.util.find_spec("langgraph.checkpoint.postgres") is None
        ):
            self.kind = "sqlite"
        self.prefix = f"bench_scale_{uuid.uuid4().hex[:10]}"
        self.schemas: list[str] = []

    def location(self, name: str) -> str:
        """A new, empty place: a URL (its own schema) or a directory."""
        if self.kind == "sqlite":
            directory = self.base / f"{name}.state"
            directory.mkdir()
            return str(directory)
        import psycopg
        from psycopg import sql

        schema = f"{self.prefix}_{name}"
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        self.schemas.append(schema)
        return f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"

    def announce(self, location: str) -> dict[str, Any]:
        """The announcer's configuration: the questions, and the execution ledger beside them."""
        if self.kind == "sqlite":
            return {"use": "sqlite", "path": f"{location}/inbox.sqlite3", "timeout": 120.0}
        return {
            "use": "postgres",
            "url": location,
            "table": "agent_wait_inbox",
            "channel": None,
            "create_table": True,
        }

    def copy(self, parked: str, name: str) -> str:
        """A copy of the parked state, for one run."""
        target = self.location(name)
        if self.kind == "sqlite":
            for file in ("checkpoints.sqlite3", "inbox.sqlite3"):
                # The backup API: a copy of the file alone would miss what is in its WAL.
                with (
                    sqlite3.connect(Path(parked) / file) as source,
                    sqlite3.connect(Path(target) / file) as copy,
                ):
                    source.backup(copy)
                source.close()
                copy.close()
            return target
        import psycopg
        from psycopg import sql

        source, schema = self.schemas[0], self.schemas[-1]
        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT table_name FROM information_schema.tables WHERE table_schema = %s",
                (source,),
            ).fetchall()
            for (table,) in tables:
                into, like = sql.Identifier(schema, table), sql.Identifier(source, table)
                conn.execute(sql.SQL("CREATE TABLE {} (LIKE {} INCLUDING ALL)").format(into, like))
                conn.execute(sql.SQL("INSERT INTO {} SELECT * FROM {}").format(into, like))
        return target

    def drop(self) -> None:
        """Remove every schema made (the directories go with the temporary one)."""
        if not self.schemas:
            return
        import psycopg
        from psycopg import sql

        with psycopg.connect(POSTGRES_URL, autocommit=True) as conn:
            for schema in self.schemas:
                conn.execute(
                    sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
                )


def _announcer(config: dict[str, Any]) -> Any:
    options = dict(config)
    if options.pop("use") == "postgres":
        from agent_wait.postgres import PostgresAnnounce

        return PostgresAnnounce(**options)
    from agent_wait.core import announcer

    return announcer("sqlite", **options)


def park(
    directory: Path, checkpoints: str, announce: dict[str, Any], threads: int
) -> list[dict[str, Any]]:
    """Park ``threads`` threads once; their answer messages (approve), in thread order."""
    from agent_wait.core import MemoryAnnounce
    from agent_wait.langgraph import handle_message

    graph = build(checkpoints, str(directory / "effects.txt"))
    if checkpoints.startswith("postgresql://"):
        graph.checkpointer.setup()
    asked = MemoryAnnounce()
    inbox = _announcer(announce)
    for n in range(threads):
        thread_id = f"scale-{n:05d}"
        handle_message(
            graph, {"thread_id": thread_id, "input": {"order_id": thread_id}}, [inbox, asked]
        )
    assert len(asked.envelopes) == threads, f"{len(asked.envelopes)} of {threads} threads parked"
    return [_approve(envelope) for envelope in asked.envelopes]


def _approve(envelope: Any) -> dict[str, Any]:
    """The answer message that approves an envelope's question."""
    reply = envelope.reply_with.model_dump(mode="json", exclude_none=True)
    return {**reply, "answer": {"action": "approve"}}


@contextmanager
def _workers(
    count: int, settings: dict[str, Any], env: dict[str, str], logs: Path
) -> Iterator[list[subprocess.Popen[str]]]:
    processes: list[subprocess.Popen[str]] = []
    try:
        for n in range(count):
            with (logs / f"worker-{n}.log").open("w") as log:
                processes.append(
                    subprocess.Popen(
                        [sys.executable, __file__, "worker", json.dumps(settings)],
                        stdin=subprocess.PIPE,
                        stdout=subprocess.PIPE,
                        stderr=log,
                        text=True,
                        env=env,
                    )
                )
        yield processes
    finally:
        for process in processes:
            if process.poll() is None:
                process.send_signal(signal.SIGKILL)
            process.wait(timeout=60)


def _lines(effects: Path) -> int:
    return effects.read_bytes().count(b"\n") if effects.exists() else 0


def run_once(
    use: str,
    workers: int,
    answers: list[dict[str, Any]],
    checkpoints: str,
    announce: dict[str, Any],
    directory: Path,
) -> dict[str, Any]:
    """Answer every parked thread with ``workers`` processes; resumes/s and what ran twice."""
    directory.mkdir()
    effects = directory / "effects.txt"
    shared = SHARED[use](uuid.uuid4().hex[:10], directory)
    messages = make_entry(use, shared.options)
    try:
        for message in answers:
            messages.send(message)
        settings = {
            "use": use,
            "options": shared.options,
            "checkpoints": checkpoints,
            "effects": str(effects),
        }
        env = {
            **os.environ,
            "AGENT_WAIT_ANNOUNCE": json.dumps([announce]),
            "AGENT_WAIT_HOME": str(directory),
            "PYTHONUNBUFFERED": "1",
        }
        env.pop("AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD", None)
        with _workers(workers, settings, env, directory) as processes:
            for process in processes:
                assert process.stdout is not None
                line = process.stdout.readline()
                assert line.strip() == "ready", f"worker did not start: {line!r} (see {directory})"
            started = time.perf_counter()
            for process in processes:
                assert process.stdin is not None
                process.stdin.write("go\n")
                process.stdin.flush()
            deadline = time.monotonic() + RUN_SECONDS
            while _lines(effects) < len(answers):
                assert time.monotonic() < deadline, (
                    f"{use} W={workers}: {_lines(effects)} of {len(answers)} resumed"
                )
                assert all(p.poll() is None for p in processes), (
                    f"a worker exited (see {directory})"
                )
                time.sleep(0.01)  # polling a file's length, not synchronisation
            seconds = time.perf_counter() - started
            # A body's line comes just before its thread's last checkpoint: the workers keep
            # serving until every thread has finished.
            graph = build(checkpoints, str(effects))
            unfinished = [m["thread_id"] for m in answers]
            while unfinished and time.monotonic() < deadline:
                unfinished = [
                    thread_id
                    for thread_id in unfinished
                    if graph.get_state({"configurable": {"thread_id": thread_id}}).next
                ]
                time.sleep(0.01 if unfinished else 0)
        lines = Counter(effects.read_text().splitlines())
        twice = sorted(line for line, n in lines.items() if n != 1)
        return {
            "seconds": seconds,
            "resumes_per_second": len(answers) / seconds,
            "handled_twice": twice,
            "unfinished": unfinished,
            "load_average_after": list(os.getloadavg()),
        }
    finally:
        messages.close()
        shared.cleanup()


def measure(threads: int) -> dict[str, Any]:
    """Every entry point at W = 1 and W = 2; rows with resumes/s and the W2/W1 ratio."""
    threads = int(os.environ.get(THREADS_ENV, threads))
    chosen = [
        n.strip() for n in os.environ.get(ENTRIES_ENV, ",".join(SHARED)).split(",") if n.strip()
    ]
    unknown = sorted(set(chosen) - set(SHARED))
    if unknown:
        raise ValueError(
            f"{ENTRIES_ENV}: unknown entry points {unknown}; choose from {list(SHARED)}"
        )
    with tempfile.TemporaryDirectory(prefix="agent-wait-scale-") as temporary:
        base = Path(temporary)
        parked = base / "parked"
        parked.mkdir()
        state = SharedState(base)
        previous = os.environ.get("AGENT_WAIT_HOME")
        os.environ["AGENT_WAIT_HOME"] = str(parked)
        try:
            source = state.location("parked")
            answers = park(parked, source, state.announce(source), threads)
            rows: list[dict[str, Any]] = []
            for use in chosen:
                runs: dict[str, dict[str, Any]] = {}
                for w in (1, 2):
                    copy = state.copy(source, f"{use}_{w}")
                    runs[f"W{w}"] = run_once(
                        use, w, answers, copy, state.announce(copy), base / f"{use}-{w}"
                    )
                ratio = runs["W2"]["resumes_per_second"] / runs["W1"]["resumes_per_second"]
                clean = not any(r["handled_twice"] or r["unfinished"] for r in runs.values())
                rows.append(
                    {
                        "entry": use,
                        "threads": threads,
                        "runs": runs,
                        "ratio": ratio,
                        "target": TARGET,
                        "clean": clean,
                        "passed": clean and ratio >= TARGET,
                    }
                )
                print(
                    f"  {use}: {runs['W1']['resumes_per_second']:.1f} -> "
                    f"{runs['W2']['resumes_per_second']:.1f} resumes/s, W2/W1 {ratio:.2f}"
                    f"{'' if clean else ', NOT CLEAN'}",
                    file=sys.stderr,
                    flush=True,
                )
        finally:
            state.drop()
            if previous is None:
                os.environ.pop("AGENT_WAIT_HOME", None)
            else:
                os.environ["AGENT_WAIT_HOME"] = previous
    return {"threads": threads, "rows": rows, "shared_state": state.kind}


if __name__ == "__main__" and sys.argv[1:2] == ["worker"]:
    worker(json.loads(sys.argv[2]))
