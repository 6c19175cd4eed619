"""@wait on LangChain tools: under the prebuilt ToolNode and under create_agent.

LangGraph matches a task's answers to its interrupt() calls by the order they run. The prebuilt
ToolNode runs every tool call of a model turn in one task, create_agent runs each as its own
task. These tests pin what agent-wait does with both.
"""

from __future__ import annotations

import asyncio
from typing import Annotated, Any

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import InjectedToolCallId, tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, ToolRuntime, tools_condition
from langgraph.types import Command, interrupt
from pydantic import ValidationError

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.langgraph import (
    InterruptRoutingError,
    ahandle_message,
    handle_message,
    questions_in,
    wait,
)
from tests.langgraph.conftest import ScriptedChat, answer, calls, check_envelope, model


class Bank:
    """Side effects of the tools, so tests can count how often each body ran."""

    def __init__(self) -> None:
        self.runs: list[tuple[str, Any]] = []

    def tools(self, *, asynchronous: bool = False) -> list[Any]:
        """The tools, as sync functions or (``asynchronous``) coroutines."""
        bank = self

        def refund_body(order_id: str, amount: int) -> str:
            bank.runs.append(("issue_refund", amount))
            return f"refunded {amount} on {order_id}"

        def close_body(account_id: str) -> str:
            bank.runs.append(("close_account", account_id))
            return f"closed {account_id}"

        policy = WaitPolicy(timeout="P1D", tags={"approver_group": "finance"})
        if asynchronous:

            @tool
            @wait(policy)
            async def issue_refund(order_id: str, amount: int) -> str:
                """Refund an order."""
                await asyncio.sleep(0)
                return refund_body(order_id, amount)

            @tool
            @wait
            async def close_account(account_id: str) -> str:
                """Close an account."""
                return close_body(account_id)

        else:

            @tool
            @wait(policy)
            def issue_refund(order_id: str, amount: int) -> str:
                """Refund an order."""
                return refund_body(order_id, amount)

            @tool
            @wait
            def close_account(account_id: str) -> str:
                """Close an account."""
                return close_body(account_id)

        @tool
        def lookup(order_id: str) -> str:
            """Look an order up (no approval needed)."""
            bank.runs.append(("lookup", order_id))
            return f"{order_id}: paid"

        return [issue_refund, close_account, lookup]


def tool_node_graph(chat: ScriptedChat, tools: list[Any]) -> Any:
    """The classic agent loop: a model node, then the prebuilt ToolNode, then the model again."""

    def agent(state: MessagesState) -> MessagesState:
        return {"messages": [chat.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


def start(thread_id: str) -> dict[str, Any]:
    return {"thread_id": thread_id, "input": {"messages": [("user", "refund order-4471")]}}


def tool_messages(result: Any) -> dict[str, ToolMessage]:
    return {m.name: m for m in result["messages"] if isinstance(m, ToolMessage)}


def test_tool_node_approve_runs_the_tool_once(inbox: MemoryAnnounce) -> None:
    bank = Bank()
    refund = calls(("issue_refund", {"order_id": "order-4471", "amount": 41000}))
    graph = tool_node_graph(model(refund, AIMessage("done")), bank.tools())

    started = handle_message(graph, start("t1"), inbox)
    [envelope] = started.report.envelopes
    check_envelope(
        envelope,
        thread_id="t1",
        question_id=started.question_ids[0],
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}},
        allowed_actions=["approve", "reject"],
        expires_at=envelope.expires_at,
        source={"function": "issue_refund"},
        tags={"approver_group": "finance"},
    )
    assert envelope.expires_at is not None
    resumed = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert resumed.outcome is Outcome.RESUMED
    assert tool_messages(resumed.result)["issue_refund"].content == "refunded 41000 on order-4471"
    assert resumed.result["messages"][-1].content == "done"
    assert (
        handle_message(graph, answer(envelope, {"action": "approve"})).outcome is Outcome.DUPLICATE
    )
    assert bank.runs == [("issue_refund", 41000)]


def test_tool_node_reject_the_model_sees_the_answer(inbox: MemoryAnnounce) -> None:
    bank = Bank()
    chat = model(calls(("issue_refund", {"order_id": "o-1", "amount": 41000})), AIMessage("ok"))
    graph = tool_node_graph(chat, bank.tools())
    started = handle_message(graph, start("t2"), inbox)
    verdict = {"action": "reject", "reason": "over the limit"}
    handle_message(graph, answer(started.report.envelopes[0], verdict), inbox)
    assert bank.runs == []
    seen = tool_messages({"messages": chat.received[-1]})["issue_refund"]
    assert "over the limit" in str(seen.content)


def test_tool_node_with_one_gated_and_one_plain_tool(inbox: MemoryAnnounce) -> None:
    bank = Bank()
    turn = calls(
        ("lookup", {"order_id": "o-2"}), ("issue_refund", {"order_id": "o-2", "amount": 3})
    )
    graph = tool_node_graph(model(turn, AIMessage("done")), bank.tools())
    started = handle_message(graph, start("t3"), inbox)
    assert len(started.question_ids) == 1
    resumed = handle_message(graph, answer(started.report.envelopes[0], {"action": "approve"}))
    assert resumed.outcome is Outcome.RESUMED
    assert ("issue_refund", 3) in bank.runs
    assert bank.runs.count(("issue_refund", 3)) == 1


def test_tool_node_two_gated_tools_in_one_turn_are_refused(inbox: MemoryAnnounce) -> None:
    # Sync ToolNode: one question surfaces first; the answer is addressed to its tool, so it can
    # never run the other one; the second question is refused before it is published, because
    # answering it would run the first (approved) tool again.
    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-3", "amount": 10}),
        ("close_account", {"account_id": "acc-9"}),
    )
    graph = tool_node_graph(model(turn, AIMessage("done")), bank.tools())
    first = handle_message(graph, start("t4"), inbox)
    assert len(first.question_ids) == 1
    approve = answer(first.report.envelopes[0], {"action": "approve"})
    with pytest.raises(InterruptRoutingError, match="node 'tools' asked") as info:
        handle_message(graph, approve, inbox)
    assert "create_agent" in str(info.value)
    [published] = inbox.envelopes  # the second question was never published
    call = {"issue_refund": ("issue_refund", 10), "close_account": ("close_account", "acc-9")}
    # At most the approved tool ran, once; the other tool never got its answer.
    assert bank.runs in ([], [call[published.question["function"]]])


async def test_tool_node_two_gated_tools_in_one_turn_are_refused_async(
    inbox: MemoryAnnounce,
) -> None:
    # Async ToolNode: both tools ask in the same run under one interrupt id; refused at once.
    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-3", "amount": 10}),
        ("close_account", {"account_id": "acc-9"}),
    )
    graph = tool_node_graph(model(turn, AIMessage("done")), bank.tools(asynchronous=True))
    with pytest.raises(
        InterruptRoutingError, match=r"issue_refund, close_account|close_account, issue_refund"
    ):
        await ahandle_message(graph, start("t5"), inbox)
    assert inbox.envelopes == []
    assert bank.runs == []


def test_a_misaddressed_answer_is_refused_before_it_is_saved() -> None:
    bank = Bank()
    graph = tool_node_graph(
        model(calls(("issue_refund", {"order_id": "o-6", "amount": 6})), AIMessage("done")),
        bank.tools(),
    )
    cfg: RunnableConfig = {"configurable": {"thread_id": "t6"}}
    [pending] = graph.invoke({"messages": [("user", "go")]}, cfg)["__interrupt__"]
    elsewhere = {"__agent_wait__": {"to": "f" * 64, "answer": {"action": "approve"}}}
    with pytest.raises(ValidationError, match="addressed to another question"):
        graph.invoke(Command(resume={pending.id: elsewhere}), cfg)
    assert bank.runs == []
    assert [i.id for i in graph.get_state(cfg).interrupts] == [pending.id]
    # The unaddressed answer of a host written from the message formats alone still works.
    done = graph.invoke(Command(resume={pending.id: {"action": "approve"}}), cfg)
    assert bank.runs == [("issue_refund", 6)]
    assert done["messages"][-1].content == "done"


def agent_graph(chat: ScriptedChat, tools: list[Any]) -> Any:
    return create_agent(chat, tools, checkpointer=InMemorySaver())


def test_create_agent_routes_two_gated_tools_by_question(inbox: MemoryAnnounce) -> None:
    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-7", "amount": 70}),
        ("close_account", {"account_id": "acc-7"}),
    )
    chat = model(turn, AIMessage("all done"))
    graph = agent_graph(chat, bank.tools())

    started = handle_message(graph, start("t7"), inbox)
    assert started.outcome is Outcome.STARTED
    by_function = {e.question["function"]: e for e in started.report.envelopes}
    assert set(by_function) == {"issue_refund", "close_account"}
    assert len(set(started.question_ids)) == 2

    # Answer the second tool first: the first one is still waiting and is published again.
    closed = handle_message(
        graph, answer(by_function["close_account"], {"action": "approve"}), inbox
    )
    assert closed.outcome is Outcome.RESUMED
    assert closed.question_ids == [by_function["issue_refund"].question_id]
    assert bank.runs == [("close_account", "acc-7")]

    verdict = {"action": "reject", "reason": "no"}
    refunded = handle_message(graph, answer(by_function["issue_refund"], verdict), inbox)
    assert refunded.outcome is Outcome.RESUMED
    assert not refunded.parked
    assert bank.runs == [("close_account", "acc-7")]
    results = tool_messages(refunded.result)
    assert results["close_account"].content == "closed acc-7"
    assert "no" in str(results["issue_refund"].content)
    assert refunded.result["messages"][-1].content == "all done"
    for envelope in by_function.values():
        late = handle_message(graph, answer(envelope, {"action": "approve"}))
        assert late.outcome is Outcome.DUPLICATE
    assert bank.runs == [("close_account", "acc-7")]


async def test_create_agent_async(inbox: MemoryAnnounce) -> None:
    bank = Bank()
    turn = calls(
        ("issue_refund", {"order_id": "o-8", "amount": 80}),
        ("close_account", {"account_id": "acc-8"}),
    )
    graph = agent_graph(model(turn, AIMessage("done")), bank.tools(asynchronous=True))
    started = await ahandle_message(graph, start("t8"), inbox)
    envelopes = {e.question["function"]: e for e in started.report.envelopes}
    await asyncio.gather(
        *(
            ahandle_message(graph, answer(e, {"action": "approve"}), inbox)
            for e in [envelopes["issue_refund"]]
        )
    )
    last = await ahandle_message(graph, answer(envelopes["close_account"], {"action": "approve"}))
    assert last.outcome is Outcome.RESUMED
    assert sorted(bank.runs) == [("close_account", "acc-8"), ("issue_refund", 80)]
    assert questions_in(last.result) == []


def test_injected_tool_arguments_are_not_published(inbox: MemoryAnnounce) -> None:
    seen: list[Any] = []

    @tool
    @wait
    def issue_refund(
        order_id: str,
        amount: int,
        tool_call_id: Annotated[str, InjectedToolCallId],
        runtime: ToolRuntime,
    ) -> str:
        """Refund an order."""
        seen.append((tool_call_id, runtime.tool_call_id))
        return "refunded"

    turn = calls(("issue_refund", {"order_id": "o-9", "amount": 9}))
    graph = agent_graph(model(turn, AIMessage("done")), [issue_refund])
    started = handle_message(graph, start("t9"), inbox)
    [envelope] = started.report.envelopes
    assert envelope.question == {
        "function": "issue_refund",
        "args": {"order_id": "o-9", "amount": 9},
    }
    handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert seen == [("call_0", "call_0")]


def test_a_bare_interrupt_in_a_tool_node_tool(inbox: MemoryAnnounce) -> None:
    @tool
    def ask_customer(question: str) -> str:
        """Ask the customer something (code that never heard of agent-wait)."""
        return f"customer says {interrupt({'ask': question})}"

    turn = calls(("ask_customer", {"question": "which card?"}))
    graph = tool_node_graph(model(turn, AIMessage("done")), [ask_customer])
    started = handle_message(graph, start("t10"), inbox)
    [envelope] = started.report.envelopes
    check_envelope(
        envelope,
        thread_id="t10",
        question_id=started.question_ids[0],
        question={"ask": "which card?"},
        allowed_actions=["approve", "reject"],
        source=None,
    )
    resumed = handle_message(graph, answer(envelope, "the visa"), inbox)
    assert tool_messages(resumed.result)["ask_customer"].content == "customer says the visa"
