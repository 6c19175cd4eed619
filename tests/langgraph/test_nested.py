"""Questions asked inside nested graphs and tool calls carry where they were asked."""

from __future__ import annotations

import asyncio
import json
import operator
from typing import Annotated, Any, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.langgraph import (
    ahandle_message,
    handle_message,
    publish_interrupts,
    questions_in,
    stream_message,
)
from tests.langgraph.conftest import (
    ENVELOPE_FIELDS,
    answer,
    calls,
    check_envelope,
    model,
    namespace,
)


class State(TypedDict, total=False):
    replies: Annotated[list[Any], operator.add]


def confirming_subgraph() -> Any:
    """A subgraph whose one node asks a bare question, knowing nothing of agent-wait."""

    def confirm(state: State) -> State:
        return {"replies": [interrupt("continue?")]}

    builder = StateGraph(State)
    builder.add_node("confirm", confirm)
    builder.add_edge(START, "confirm")
    return builder.compile()


def two_subgraphs() -> Any:
    """Two subgraphs run side by side, each asking the same question."""

    class Parent(TypedDict, total=False):
        billing: Any
        shipping: Any

    def run_in(key: str) -> Any:
        sub = confirming_subgraph()
        return lambda state: {key: sub.invoke({})["replies"][0]}

    builder = StateGraph(Parent)
    builder.add_node("billing", run_in("billing"))
    builder.add_node("shipping", run_in("shipping"))
    builder.add_edge(START, "billing")
    builder.add_edge(START, "shipping")
    return builder.compile(checkpointer=InMemorySaver())


def mounted_subgraphs(saver: InMemorySaver | None = None) -> Any:
    """The same, with the compiled subgraphs as the parent's nodes."""
    builder = StateGraph(State)
    builder.add_node("billing", confirming_subgraph())
    builder.add_node("shipping", confirming_subgraph())
    builder.add_edge(START, "billing")
    builder.add_edge(START, "shipping")
    return builder.compile(checkpointer=saver or InMemorySaver())


START_MESSAGE = {"thread_id": "t-1", "input": {}}
CONFIG: RunnableConfig = {"configurable": {"thread_id": "t-1"}}


def by_node(envelopes: Any) -> dict[str, Any]:
    return {e.context.namespace.split(":")[0]: e for e in envelopes}


def test_two_subgraphs_asking_the_same_bare_question_are_told_apart(
    inbox: MemoryAnnounce,
) -> None:
    graph = mounted_subgraphs()
    assert handle_message(graph, START_MESSAGE, inbox).outcome is Outcome.STARTED

    found = by_node(inbox.envelopes)
    assert set(found) == {"billing", "shipping"}
    for parent, envelope in found.items():
        # The same question, no source (a bare interrupt), told apart by the context alone.
        check_envelope(
            envelope,
            thread_id="t-1",
            question_id=envelope.question_id,
            question="continue?",
            allowed_actions=[],
            context={
                "framework": "langgraph",
                "node": "confirm",
                "namespace": namespace(parent, "confirm"),
            },
        )
    # The namespace is the asking node's own checkpoint_ns: its answer goes to that subgraph.
    handle_message(graph, answer(found["billing"], "bill it"), inbox)
    handle_message(graph, answer(found["shipping"], "ship it"), inbox)
    done = graph.get_state(CONFIG)
    assert sorted(done.values["replies"]) == ["bill it", "ship it"]
    assert done.next == ()


def test_a_republished_question_carries_the_same_context(inbox: MemoryAnnounce) -> None:
    graph = mounted_subgraphs()
    handle_message(graph, START_MESSAGE, inbox)
    first = [json.loads(e.to_json())["context"] for e in inbox.envelopes]
    # A redelivered start message republishes from the stored state, not from a run.
    assert handle_message(graph, START_MESSAGE, inbox).outcome is Outcome.REPUBLISHED
    again = [json.loads(e.to_json())["context"] for e in inbox.envelopes[len(first) :]]
    assert sorted(again, key=str) == sorted(first, key=str)


def test_a_subgraph_called_inside_a_node_is_published_from_its_innermost_node(
    inbox: MemoryAnnounce,
) -> None:
    graph = two_subgraphs()
    handle_message(graph, START_MESSAGE, inbox)
    found = by_node(inbox.envelopes)
    assert {n: e.context.node for n, e in found.items()} == {
        "billing": "confirm",
        "shipping": "confirm",
    }
    for parent, envelope in found.items():
        assert namespace(parent, "confirm").fullmatch(envelope.context.namespace)
    handle_message(graph, answer(found["shipping"], "ship it"), inbox)
    handle_message(graph, answer(found["billing"], "bill it"), inbox)
    assert graph.get_state(CONFIG).values == {"billing": "bill it", "shipping": "ship it"}


def test_the_async_host_publishes_the_context_too(inbox: MemoryAnnounce) -> None:
    graph = mounted_subgraphs()
    handled = asyncio.run(ahandle_message(graph, START_MESSAGE, inbox))
    assert handled.outcome is Outcome.STARTED
    assert {e.context.node for e in inbox.envelopes} == {"confirm"}
    assert set(by_node(inbox.envelopes)) == {"billing", "shipping"}


def test_the_streaming_host_publishes_the_context_too(inbox: MemoryAnnounce) -> None:
    graph = mounted_subgraphs()
    started = stream_message(graph, START_MESSAGE, inbox, stream_mode="updates", subgraphs=True)
    list(started)
    assert started.handled.outcome is Outcome.STARTED
    found = by_node(inbox.envelopes)
    assert set(found) == {"billing", "shipping"}
    for parent, envelope in found.items():
        assert envelope.context is not None
        assert envelope.context.node == "confirm"
        assert namespace(parent, "confirm").fullmatch(envelope.context.namespace or "")
    resumed = stream_message(graph, answer(found["billing"], "bill it"), inbox)
    list(resumed)
    # Still parked on the other subgraph's question: published again with its context.
    [again] = resumed.handled.report.envelopes
    assert again.context == found["shipping"].context


def test_questions_in_reads_the_context_from_a_state_read_with_its_subgraphs() -> None:
    graph = mounted_subgraphs()
    parked = graph.invoke({}, CONFIG)
    nested = questions_in(graph.get_state(CONFIG, subgraphs=True))
    assert sorted(q.context.namespace.split(":")[0] for q in nested) == ["billing", "shipping"]
    # The invoke() result tells nothing of where: no context, exactly the contract's fields.
    assert [q.context for q in questions_in(parked)] == [None, None]
    inbox = MemoryAnnounce()
    publish_interrupts(parked, "t-1", inbox, strict=True)
    assert [list(json.loads(e.to_json())) for e in inbox.envelopes] == [ENVELOPE_FIELDS] * 2


def ask_tool_agent() -> Any:
    @tool
    def check_stock(sku: str) -> str:
        """Ask a person whether to go on checking this SKU."""
        return f"{sku}: {interrupt('continue?')}"

    chat = model(
        calls(("check_stock", {"sku": "A-1"}), ("check_stock", {"sku": "B-2"})), AIMessage("done")
    )
    return create_agent(chat, [check_stock], checkpointer=InMemorySaver())


def test_create_agent_tool_calls_asking_the_same_question_carry_their_tool_call(
    inbox: MemoryAnnounce,
) -> None:
    agent = ask_tool_agent()
    handle_message(agent, {"thread_id": "t-1", "input": {"messages": [("user", "stock?")]}}, inbox)

    contexts = {e.context.tool_call_id: e for e in inbox.envelopes}
    assert set(contexts) == {"call_0", "call_1"}
    for call_id, envelope in contexts.items():
        check_envelope(
            envelope,
            thread_id="t-1",
            question_id=envelope.question_id,
            question="continue?",
            allowed_actions=[],
            context={
                "framework": "langgraph",
                "node": "tools",
                "namespace": namespace("tools"),
                "tool": "check_stock",
                "tool_call_id": call_id,
            },
        )
    handle_message(agent, answer(contexts["call_1"], "second"), inbox)
    handle_message(agent, answer(contexts["call_0"], "first"), inbox)
    messages = agent.get_state(CONFIG).values["messages"]
    results = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
    # Each answer reached the call its envelope named.
    assert results == {"call_0": "A-1: first", "call_1": "B-2: second"}


def test_subagents_in_tools_asking_the_same_question_are_told_apart(
    inbox: MemoryAnnounce,
) -> None:
    def subagent(name: str) -> Any:
        @tool
        def proceed() -> str:
            """Ask whether to go on."""
            return str(interrupt("continue?"))

        chat = model(calls(("proceed", {})), AIMessage(f"{name} done"))
        return create_agent(chat, [proceed], name=name)

    research, writing = subagent("research"), subagent("writing")

    @tool
    def research_topic(topic: str) -> str:
        """Research a topic with the research subagent."""
        return research.invoke({"messages": [("user", topic)]})["messages"][-1].content

    @tool
    def write_draft(topic: str) -> str:
        """Write a draft with the writing subagent."""
        return writing.invoke({"messages": [("user", topic)]})["messages"][-1].content

    chat = model(
        calls(("research_topic", {"topic": "tides"}), ("write_draft", {"topic": "tides"})),
        AIMessage("all done"),
    )
    supervisor = create_agent(chat, [research_topic, write_draft], checkpointer=InMemorySaver())
    handle_message(supervisor, {"thread_id": "t-1", "input": {"messages": [("user", "go")]}}, inbox)

    [first, second] = inbox.envelopes
    assert first.question == second.question == "continue?"
    assert first.source is None
    assert second.source is None
    assert {e.context.tool for e in inbox.envelopes} == {"research_topic", "write_draft"}
    assert {e.context.tool_call_id for e in inbox.envelopes} == {"call_0", "call_1"}
    for envelope in (first, second):
        handle_message(supervisor, answer(envelope, "yes"), inbox)
    messages = supervisor.get_state(CONFIG).values["messages"]
    results = {m.tool_call_id: m.content for m in messages if isinstance(m, ToolMessage)}
    assert results == {"call_0": "research done", "call_1": "writing done"}
    assert messages[-1].content == "all done"
