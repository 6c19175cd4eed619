"""serve(): a LangGraph worker process fed by the embedded entry point, answered by the CLI."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import pytest
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from langgraph.graph import START, StateGraph

from agent_wait.core import SqliteAnnounce, SqliteEntry, SqliteQuestionStore, WaitPolicy, hookimpl
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import ServeStatus, answer
from agent_wait.langgraph import aserve, serve, wait
from agent_wait.testing import registered_plugin
from tests.serving import (
    check_serve_parks_and_resumes,
    health_endpoints,
    probe,
    serving,
    until,
)
from tests.trust_serving import check_serve_runs_only_signed_replies

APP = Path(__file__).with_name("serve_app.py")
START_MESSAGE = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}


def open_question(function: str) -> str | None:
    if not default_inbox_path().exists():
        return None
    with SqliteQuestionStore() as store:
        for question in store.open_questions():
            source = question.envelope.source
            if source is not None and source.function == function:
                return question.envelope.question_id
    return None


def worker(tmp_path: Path, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            str(APP),
            str(tmp_path / "checkpoints.sqlite3"),
            str(tmp_path / "runs.txt"),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


def agent_wait(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "agent_wait.host._cli", *argv],
        capture_output=True,
        text=True,
        # --by names the person answering (a shared account's setting).
        env={**os.environ, "AGENT_WAIT_ALLOW_BY": "1"},
        timeout=60,
        check=False,
    )


def test_a_killed_worker_redelivers_and_the_gated_body_runs_once(tmp_path: Path) -> None:
    runs, marker = tmp_path / "runs.txt", tmp_path / "hanging"
    first = worker(tmp_path, str(marker))
    try:
        with SqliteEntry() as entry:
            entry.send(START_MESSAGE)
        refund = until(lambda: open_question("issue_refund"), "the refund question")
        answered = agent_wait("answer", refund, "approve", "--by", "alice")
        assert answered.returncode == 0, answered.stderr
        # The resume ran the body, saved the checkpoint, and hangs publishing the next question.
        until(marker.exists, "the worker to reach the next publish")
        assert runs.read_text() == "refund order-4471 41000\n"
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()

    second = worker(tmp_path)
    try:
        # The unacknowledged answer comes back; it resumes nothing and republishes the next question.
        notify = until(lambda: open_question("notify_customer"), "the republished question")
        assert notify == marker.read_text()
        assert agent_wait("answer", notify, "approve", "--by", "bob").returncode == 0
        until(lambda: "notify" in runs.read_text(), "the notify body")
        until(lambda: not _messages_left(), "every message acknowledged")
        with SqliteEntry() as entry:
            assert entry.dead_letters() == []
    finally:
        second.send_signal(signal.SIGTERM)
        out, err = second.communicate(timeout=60)
    assert second.returncode == 0, err
    assert out.strip() == "acknowledged=2 dead=0"
    assert "(attempt 2): duplicate" in err
    assert "(attempt 1): resumed" in err
    assert runs.read_text() == "refund order-4471 41000\nnotify order-4471\n"
    with SqliteQuestionStore() as store:
        assert [(q.status, q.answered_by) for q in store.find(refund)] == [("answered", "alice")]
        assert [(q.status, q.answered_by) for q in store.find(notify)] == [("answered", "bob")]


def _messages_left() -> bool:
    connection = sqlite3.connect(default_inbox_path())
    try:
        return connection.execute("SELECT count(*) FROM agent_wait_messages").fetchone()[0] > 0
    finally:
        connection.close()


class State(TypedDict, total=False):
    order_id: str
    amount: int
    result: Any


@dataclass
class Refunds:
    """A one-node graph, checkpointed in sqlite, whose gated body records each order it runs."""

    graph: Any
    runs: list[str]


@pytest.fixture
def refunds(tmp_path: Path) -> Iterator[Refunds]:
    runs: list[str] = []

    @wait(WaitPolicy(timeout="PT1H"))
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(order_id)
        return f"refunded {amount}"

    builder = StateGraph(State)
    builder.add_node("refund", lambda s: {"result": issue_refund(s["order_id"], s["amount"])})
    builder.add_edge(START, "refund")
    connection = sqlite3.connect(tmp_path / "checkpoints.sqlite3", check_same_thread=False)
    yield Refunds(builder.compile(checkpointer=SqliteSaver(connection)), runs)
    connection.close()


def test_serve_in_process_runs_threads_in_parallel(tmp_path: Path, refunds: Refunds) -> None:
    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    for n in range(6):
        entry.send({"thread_id": f"o{n}", "input": {"order_id": f"o{n}", "amount": n}})
    with serving(
        lambda stop: serve(
            refunds.graph, entry, SqliteAnnounce(path), concurrency=3, wait=0.05, stop=stop
        )
    ) as reports:
        with SqliteQuestionStore(path) as store:
            until(lambda: len(store.open_questions()) == 6, "six parked threads")
            for question in store.open_questions():
                answer(question.envelope.question_id, "approve", by="bot", store=store, entry=entry)
        until(lambda: len(refunds.runs) == 6, "six resumed threads")
    assert sorted(refunds.runs) == [f"o{n}" for n in range(6)]
    assert reports[0].acknowledged == 12


async def test_aserve_with_an_async_checkpointer(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    runs: list[str] = []

    @wait(WaitPolicy(timeout="PT1H"))
    async def issue_refund(order_id: str, amount: int) -> str:
        runs.append(order_id)
        return f"refunded {amount}"

    async def refund(state: State) -> State:
        return {"result": await issue_refund(state["order_id"], state["amount"])}

    builder = StateGraph(State)
    builder.add_node("refund", refund)
    builder.add_edge(START, "refund")
    entry = SqliteEntry(path, poll_interval=0.02)
    for n in range(4):
        entry.send({"thread_id": f"o{n}", "input": {"order_id": f"o{n}", "amount": n}})
    store = SqliteQuestionStore(path)

    async def eventually(condition: Callable[[], bool]) -> None:
        deadline = time.monotonic() + 60
        while not condition():
            assert time.monotonic() < deadline
            await asyncio.sleep(0.05)

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "checkpoints.sqlite3")) as saver:
        graph = builder.compile(checkpointer=saver)
        stop = asyncio.Event()
        worker = asyncio.create_task(
            aserve(graph, entry, SqliteAnnounce(path), concurrency=2, wait=0.05, stop=stop)
        )
        await eventually(lambda: len(store.open_questions()) == 4)
        for question in store.open_questions():
            await asyncio.to_thread(
                answer, question.envelope.question_id, "approve", store=store, entry=entry
            )
        await eventually(lambda: len(runs) == 4)
        stop.set()
        report = await worker
    store.close()
    assert sorted(runs) == [f"o{n}" for n in range(4)]
    assert report.acknowledged == 8


def test_a_failed_publish_is_redelivered_until_the_question_is_out(
    tmp_path: Path, refunds: Refunds
) -> None:
    # The inbox's directory is a file at first: every publish fails until it is removed.
    blocker = tmp_path / "questions"
    blocker.write_text("")
    inbox = blocker / "inbox.sqlite3"
    entry = SqliteEntry(
        tmp_path / "messages.sqlite3", poll_interval=0.02, retry_delay=0.2, max_attempts=50
    )
    entry.send({"thread_id": "o1", "input": {"order_id": "o1", "amount": 5}})
    with serving(
        lambda stop: serve(refunds.graph, entry, SqliteAnnounce(inbox), wait=0.05, stop=stop)
    ) as reports:
        errors = sqlite3.connect(tmp_path / "messages.sqlite3")
        until(
            lambda: errors.execute(
                "SELECT count(*) FROM agent_wait_messages WHERE error LIKE 'AnnounceFailed%'"
            ).fetchone()[0],
            "a failed publish handed back",
        )
        errors.close()
        blocker.unlink()
        until(inbox.exists, "the redelivered start message to publish the question")
        with SqliteQuestionStore(inbox) as store:
            until(lambda: len(store.open_questions()) == 1, "the parked question")
            [question] = store.open_questions()
            answer(question.envelope.question_id, "approve", by="bot", store=store, entry=entry)
        until(lambda: refunds.runs == ["o1"], "the resumed run")
    report = reports[0]
    assert report.retried >= 1
    assert (report.acknowledged, report.dead_lettered) == (2, 0)
    assert entry.dead_letters() == []


def test_serve_with_answer_secrets_runs_only_the_replies_it_signed(
    tmp_path: Path,
    refunds: Refunds,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # The environment configures every host and serve() in the process; the first secret signs.
    monkeypatch.setenv("AGENT_WAIT_ANSWER_SECRETS", f"{'n' * 40},{'o' * 40}")
    check_serve_runs_only_signed_replies(
        lambda entry, announce, stop: serve(
            refunds.graph, entry, announce, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        START_MESSAGE,
        lambda: len(refunds.runs),
        caplog,
    )
    assert refunds.runs == ["order-4471"]


def test_serve_streams_every_run_to_the_stream_callback(tmp_path: Path, refunds: Refunds) -> None:
    chunks: list[tuple[str, Any]] = []
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds.graph,
            entry,
            announce,
            concurrency=1,
            wait=0.05,
            stop=stop,
            stream=lambda thread_id, chunk: chunks.append((thread_id, chunk)),
            stream_mode="updates",
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": "s-1", "input": {"order_id": "s-1", "amount": 3}}],
        lambda: len(refunds.runs),
    )
    # The start parks (LangGraph's interrupt update), the resume runs the node.
    assert [thread for thread, _ in chunks] == ["s-1", "s-1"]
    assert "__interrupt__" in chunks[0][1]
    assert chunks[1][1] == {"refund": {"result": "refunded 3"}}


async def test_aserve_streams_a_breakpoint_review_to_a_coroutine(tmp_path: Path) -> None:
    sent: list[str] = []

    def send(state: State) -> State:
        sent.append(state["order_id"])
        return {"result": "sent"}

    builder = StateGraph(State)
    builder.add_node("send", send)
    builder.add_edge(START, "send")
    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send({"thread_id": "b-1", "input": {"order_id": "b-1", "amount": 1}})
    chunks: list[tuple[str, Any]] = []

    async def show(thread_id: str, chunk: Any) -> None:
        chunks.append((thread_id, chunk))

    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite3")) as saver:
        graph = builder.compile(checkpointer=saver)
        stop = asyncio.Event()
        worker = asyncio.create_task(
            aserve(
                graph,
                entry,
                SqliteAnnounce(path),
                wait=0.05,
                stop=stop,
                stream=show,
                stream_mode="updates",
                interrupt_before=["send"],
            )
        )
        with SqliteQuestionStore(path) as store:
            await eventually(store.open_questions, "the breakpoint question")
            [question] = store.open_questions()
            assert question.envelope.question["node"] == "send"
            answer(question.envelope.question_id, "approve", store=store, entry=entry)
            await eventually(lambda: sent, "the reviewed node ran")
        stop.set()
        report = await worker
    assert (report.acknowledged, report.retried) == (2, 0)
    assert sent == ["b-1"]
    assert chunks[-1] == ("b-1", {"send": {"result": "sent"}})


async def eventually(condition: Callable[[], Any], what: str) -> None:
    """Poll ``condition`` while the worker task runs; fail after a minute."""
    for _ in range(1200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_stream_options_without_stream_are_refused_before_serving(refunds: Refunds) -> None:
    with pytest.raises(TypeError, match=r"\['stream_mode'\]: stream options go with stream="):
        serve(refunds.graph, stream_mode="updates")


async def test_an_option_serve_does_not_take_is_refused_before_serving(refunds: Refunds) -> None:
    # Not at every message: each would fail and be handed out again, for ever.
    bad: dict[str, Any] = {"concurency": 2}
    with pytest.raises(
        TypeError, match=r"^serve\(\) got .* 'concurency'; did you mean 'concurrency'\?$"
    ):
        serve(refunds.graph, **bad)
    with pytest.raises(
        TypeError, match=r"^aserve\(\) got an unexpected keyword argument 'strict'$"
    ):
        await aserve(refunds.graph, strict=False)  # pyright: ignore[reportCallIssue]


def test_readyz_reads_through_the_checkpointer_and_names_it_when_it_fails(
    tmp_path: Path, refunds: Refunds
) -> None:
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02)
    with health_endpoints(
        lambda stop: serve(refunds.graph, entry, wait=0.05, stop=stop, health="127.0.0.1:0")
    ) as address:
        until(lambda: probe(address, "/readyz")[0] == 200, "ready")
        checkpointer = refunds.graph.checkpointer
        assert isinstance(checkpointer, SqliteSaver)
        checkpointer.conn.close()  # the checkpoint database is gone from under the worker
        code, body = probe(address, "/readyz")
        assert code == 503
        assert body["status"] == "unavailable"
        assert body["down"] == {"checkpointer": "ProgrammingError"}
        assert probe(address, "/healthz")[0] == 200  # not ready, yet not to be restarted


async def test_aserve_readyz_reads_through_an_async_checkpointer(
    tmp_path: Path, refunds: Refunds
) -> None:
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02)
    async with AsyncSqliteSaver.from_conn_string(str(tmp_path / "cp.sqlite3")) as saver:
        graph = refunds.graph.copy(update={"checkpointer": saver})
        stop = asyncio.Event()
        seen: list[tuple[int, dict[str, Any]]] = []

        def operator(address: tuple[str, int]) -> None:
            try:
                seen.append(
                    until(lambda: (r := probe(address, "/readyz"))[0] == 200 and r, "ready")
                )
            finally:
                loop.call_soon_threadsafe(stop.set)

        loop = asyncio.get_running_loop()

        class Started:
            @hookimpl
            def worker_started(self, status: ServeStatus) -> None:
                threading.Thread(target=operator, args=(status.health_address,)).start()

        with registered_plugin(Started(), "test-aserve-health"):
            await aserve(graph, entry, wait=0.05, stop=stop, health="127.0.0.1:0")
    assert seen == [(200, {"status": "ready", "entry": "sqlite", "in_flight": 0})]
