"""The host reads what a thread waits on without the full state snapshot: the same answers."""

from __future__ import annotations

import asyncio
import operator
from typing import Annotated, Any, TypedDict

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import _host as host_module  # pyright: ignore[reportPrivateUsage]
from agent_wait.langgraph import handle_message
from agent_wait.langgraph._adapter import (
    _send_index,  # pyright: ignore[reportPrivateUsage]
)
from agent_wait.langgraph._host import (
    _AsyncHost,  # pyright: ignore[reportPrivateUsage]
    _lean,  # pyright: ignore[reportPrivateUsage]
    _run_config,  # pyright: ignore[reportPrivateUsage]
    _SyncHost,  # pyright: ignore[reportPrivateUsage]
    _Thread,  # pyright: ignore[reportPrivateUsage]
    _thread,  # pyright: ignore[reportPrivateUsage]
)
from tests.langgraph.test_long_threads import one_question
from tests.langgraph.test_nested import ask_tool_agent, mounted_subgraphs, two_subgraphs


class Replies(TypedDict, total=False):
    replies: Annotated[list[Any], operator.add]


def side_by_side() -> Any:
    """Two nodes of one step ask at once: two pending interrupts, answerable one at a time."""
    builder = StateGraph(Replies)
    builder.add_node("billing", lambda state: {"replies": [interrupt("bill?")]})
    builder.add_node("shipping", lambda state: {"replies": [interrupt("ship?")]})
    builder.add_edge(START, "billing")
    builder.add_edge(START, "shipping")
    return builder.compile(checkpointer=InMemorySaver())


def asks_twice() -> Any:
    """One node asks two questions in turn: the second is asked in the same step."""
    builder = StateGraph(Replies)
    builder.add_node("ask", lambda state: {"replies": [interrupt("first?"), interrupt("second?")]})
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def seen(host: _SyncHost, thread: _Thread) -> dict[str, Any]:
    """Everything the host decides from a loaded thread."""
    return {
        "pending": thread.pending,
        "tasks": [
            (t.id, t.name, t.interrupts, t.error, t.result, _send_index(t)) for t in thread.tasks
        ],
        "index": thread.index,
        "contexts": dict(thread.contexts),
        # The full snapshot marks finished tasks' writes as seen in the checkpoint it was given;
        # the host reads only these parts of it.
        "latest": None
        if thread.latest is None
        else (
            thread.latest.config,
            thread.latest.pending_writes,
            thread.latest.checkpoint["channel_values"],
        ),
        "asked": host._asked(thread),  # pyright: ignore[reportPrivateUsage]
        "questions": list(host.waiting(thread).questions),
        "ids": host.waiting(thread).ids,
        "published again": host.waiting(thread).unanswered,
    }


def check_agrees(graph: Any, thread_id: str, *, lean: bool = True) -> list[str]:
    """The thread as the host loads it equals the thread read from the full snapshot."""
    host = _SyncHost(graph, None)
    config = _run_config(None, thread_id)
    full = _thread(thread_id, config, host._state(config))
    loaded = host.load(thread_id)
    assert seen(host, loaded) == seen(host, full)
    loaded_async = asyncio.run(_AsyncHost(graph, None).load(thread_id))
    assert seen(host, loaded_async) == seen(host, full)
    latest = graph.checkpointer.get_tuple(config)
    taken = _lean(graph, config, latest, graph.checkpointer) is not None
    assert taken is (lean and latest is not None)
    return [i.id for i in loaded.pending]


def start(graph: Any, thread_id: str, value: Any = None) -> list[str]:
    message = {"thread_id": thread_id, "input": value if value is not None else {}}
    return handle_message(graph, message, MemoryAnnounce()).question_ids


def reply(graph: Any, thread_id: str, question_id: str, value: Any = "yes") -> Any:
    message = {"thread_id": thread_id, "question_id": question_id, "answer": value}
    return handle_message(graph, message, MemoryAnnounce())


def test_a_thread_never_run_and_one_parked_on_a_question() -> None:
    graph = one_question(InMemorySaver())
    assert check_agrees(graph, "new") == []
    [asked] = start(graph, "t")
    assert check_agrees(graph, "t") == [asked]


def test_a_thread_whose_last_run_finished() -> None:
    graph = one_question(InMemorySaver())
    [asked] = start(graph, "t")
    assert reply(graph, "t", asked).outcome is Outcome.RESUMED
    assert check_agrees(graph, "t") == []
    assert reply(graph, "t", asked).outcome is Outcome.DUPLICATE


def test_several_pending_interrupts_and_one_answered_of_them() -> None:
    graph = side_by_side()
    asked = start(graph, "t")
    assert len(asked) == 2
    assert sorted(check_agrees(graph, "t")) == sorted(asked)
    # One task finishes; the other still waits, in the same checkpoint's writes.
    assert reply(graph, "t", asked[0]).outcome is Outcome.RESUMED
    assert check_agrees(graph, "t") == [asked[1]]
    assert reply(graph, "t", asked[0]).outcome is Outcome.DUPLICATE
    assert reply(graph, "t", asked[1]).outcome is Outcome.RESUMED
    assert check_agrees(graph, "t") == []


def test_a_task_that_moved_past_its_first_question_in_the_same_step() -> None:
    graph = asks_twice()
    [first] = start(graph, "t")
    [second] = reply(graph, "t", first).question_ids
    assert check_agrees(graph, "t") == [second]
    assert reply(graph, "t", first).outcome is Outcome.DUPLICATE
    assert reply(graph, "t", "0" * 32).outcome is Outcome.UNKNOWN_QUESTION


def test_send_fan_out_tool_calls_keep_their_tool_call_context() -> None:
    agent = ask_tool_agent()
    asked = start(agent, "t", {"messages": [("user", "stock?")]})
    assert len(asked) == 2
    assert sorted(check_agrees(agent, "t")) == sorted(asked)
    host = _SyncHost(agent, None)
    contexts = host.load("t").contexts
    assert {c.tool_call_id for c in contexts.values()} == {"call_0", "call_1"}
    assert reply(agent, "t", asked[0]).outcome is Outcome.RESUMED
    assert check_agrees(agent, "t") == [asked[1]]


@pytest.mark.parametrize("mounted", [True, False], ids=["mounted", "called"])
def test_a_graph_with_subgraphs_is_read_in_full(mounted: bool) -> None:
    # A subgraph's state is part of the snapshot (one called inside a node too, when LangGraph
    # finds it in the node): the nested tasks tell where each question was asked.
    graph = mounted_subgraphs() if mounted else two_subgraphs()
    asked = start(graph, "t")
    assert len(asked) == 2
    assert sorted(check_agrees(graph, "t", lean=False)) == sorted(asked)
    assert reply(graph, "t", asked[0]).outcome is Outcome.RESUMED
    assert check_agrees(graph, "t", lean=False) == [asked[1]]


def test_a_resume_works_out_no_tasks(monkeypatch: pytest.MonkeyPatch) -> None:
    # What a thread waits on comes from its checkpoint's writes; telling its tasks (the graph's
    # channels rebuilt) is left to what needs them: publishing, a task that moved past a question.
    graph = one_question(InMemorySaver())
    [asked] = start(graph, "t")
    told: list[str] = []
    real = host_module._lean  # pyright: ignore[reportPrivateUsage]

    def counted(pregel: Any, config: Any, saved: Any, saver: Any) -> Any:
        told.append(str(config["configurable"]["thread_id"]))
        return real(pregel, config, saved, saver)

    monkeypatch.setattr(host_module, "_lean", counted)
    assert reply(graph, "t", asked).outcome is Outcome.RESUMED
    assert told == []
    # A task that moved past its first question: its name tells the ids it answered before.
    twice = asks_twice()
    [first] = start(twice, "u")
    [second] = reply(twice, "u", first).question_ids
    told.clear()
    assert reply(twice, "u", first).outcome is Outcome.DUPLICATE
    assert told == ["u"]
    assert reply(twice, "u", second).outcome is Outcome.RESUMED


def test_questions_published_again_carry_where_they_were_asked() -> None:
    agent = ask_tool_agent()
    inbox = MemoryAnnounce()
    message = {"thread_id": "t", "input": {"messages": [("user", "stock?")]}}
    assert handle_message(agent, message, inbox).outcome is Outcome.STARTED
    first = {e.question_id: e.context for e in inbox.envelopes}
    assert {c.tool_call_id for c in first.values() if c is not None} == {"call_0", "call_1"}
    inbox.envelopes.clear()
    assert handle_message(agent, message, inbox).outcome is Outcome.REPUBLISHED
    assert {e.question_id: e.context for e in inbox.envelopes} == first
