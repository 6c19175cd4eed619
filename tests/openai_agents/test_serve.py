"""serve() and aserve(): an OpenAI Agents SDK worker over the embedded entry point, answered
with answer(), each also streaming every run to a callback."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, function_tool

from agent_wait.core import SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.host import ServeReport, answer
from agent_wait.openai_agents import SqliteRuns, aserve, serve
from tests.openai_agents.scripted import ScriptedModel
from tests.serving import check_serve_parks_and_resumes, serve_until_parked, until

REFUND = {"order_id": "order-4471", "amount": 41000}


def refunds(ran: list[str]) -> Agent[Any]:
    @function_tool(needs_approval=True)
    def issue_refund(order_id: str, amount: int) -> str:
        ran.append(order_id)
        return f"refunded {amount} on {order_id}"

    return Agent("refunds", model=ScriptedModel("issue_refund", [REFUND]), tools=[issue_refund])


def test_serve_parks_and_resumes_threads(tmp_path: Path) -> None:
    ran: list[str] = []
    runs = SqliteRuns(tmp_path / "runs.sqlite3")
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds(ran), entry, announce, runs=runs, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund order-4471"} for n in range(3)],
        lambda: len(ran),
    )
    assert ran == ["order-4471"] * 3


def names(events: list[tuple[str, Any]], thread_id: str) -> list[str | None]:
    """The names of the SDK's run item events streamed for ``thread_id``."""
    return [getattr(event, "name", None) for thread, event in events if thread == thread_id]


def test_serve_streams_every_run_on_each_worker_thread_and_parks_and_resumes(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    events: list[tuple[str, Any]] = []
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds(ran),
            entry,
            announce,
            runs=SqliteRuns(tmp_path / "runs.sqlite3"),
            concurrency=2,
            wait=0.05,
            stop=stop,
            stream=lambda thread_id, event: events.append((thread_id, event)),
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund order-4471"} for n in range(2)],
        lambda: len(ran),
    )
    assert ran == ["order-4471"] * 2
    for thread_id in ("order-0", "order-1"):
        streamed = names(events, thread_id)
        assert "tool_called" in streamed, f"the start of {thread_id} was not streamed"
        assert "tool_output" in streamed, f"the resume of {thread_id} was not streamed"


def test_serve_with_a_stream_that_raises_stores_nothing_of_that_run_and_hands_it_out_again(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    raised: list[Any] = []
    # What the run store held for the thread when the second attempt streamed its first event.
    stored_on_retry: list[Any] = []
    runs = SqliteRuns(tmp_path / "runs.sqlite3")

    def show(thread_id: str, event: Any) -> None:
        if not raised:
            if getattr(event, "name", None) == "tool_called":
                raised.append(event)
                raise ConnectionError("the UI went away")
        elif not stored_on_retry:
            stored_on_retry.append(runs.load(thread_id))

    question, report = serve_until_parked(
        lambda entry, announce, stop: serve(
            refunds(ran),
            entry,
            announce,
            runs=runs,
            concurrency=1,
            wait=0.05,
            stop=stop,
            stream=show,
        ),
        tmp_path / "inbox.sqlite3",
        {"thread_id": "order-1", "input": "refund order-4471"},
    )
    assert raised, "the stream never saw the tool call"
    # A stored run would have made the retry republish its question, which streams nothing.
    assert stored_on_retry == [None]
    assert question.envelope.thread_id == "order-1"
    assert runs.load("order-1") is not None
    assert ran == []
    assert (report.acknowledged, report.retried, report.dead_lettered) == (1, 1, 0)


def test_aserve_streams_every_run_and_parks_and_resumes_on_the_running_loop(
    tmp_path: Path,
) -> None:
    ran: list[str] = []
    events: list[tuple[str, Any]] = []

    async def show(thread_id: str, event: Any) -> None:
        events.append((thread_id, event))

    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send({"thread_id": "order-1", "input": "refund order-4471"})
    reports: list[ServeReport] = []
    stop = asyncio.Event()
    loop = asyncio.new_event_loop()

    async def worker() -> None:
        reports.append(
            await aserve(
                refunds(ran),
                entry,
                SqliteAnnounce(path),
                runs=SqliteRuns(tmp_path / "runs.sqlite3"),
                wait=0.05,
                stop=stop,
                stream=show,
            )
        )

    thread = threading.Thread(target=loop.run_until_complete, args=(worker(),))
    thread.start()
    try:
        with SqliteQuestionStore(path) as store:
            [question] = until(lambda: store.open_questions(), "the thread parked")
            envelope = question.envelope
            answer(
                envelope.question_id,
                "approve",
                thread_id="order-1",
                by="bot",
                store=store,
                entry=entry,
            )
            until(lambda: ran, "the thread resumed")
    finally:
        loop.call_soon_threadsafe(stop.set)
        thread.join(timeout=60)
        loop.close()
        entry.close()
    assert ran == ["order-4471"]
    streamed = names(events, "order-1")
    assert "tool_called" in streamed, "the start was not streamed"
    assert "tool_output" in streamed, "the resume was not streamed"
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (2, 0, 0)


async def test_serve_without_runs_or_with_an_unknown_option_is_refused_before_serving(
    tmp_path: Path,
) -> None:
    agent = refunds([])
    untyped: dict[str, Any] = {}
    with pytest.raises(TypeError, match=r"^serve\(\) missing required keyword argument 'runs'$"):
        serve(agent, **untyped)
    runs = SqliteRuns(tmp_path / "runs.sqlite3")
    untyped = {"runs": runs, "max_turn": 3}
    with pytest.raises(TypeError, match=r"'max_turn'; did you mean 'max_turns'\?$"):
        await aserve(agent, **untyped)
