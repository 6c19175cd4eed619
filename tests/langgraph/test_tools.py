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

from agent_wait.core import MemoryAnnounce, Outcome, WaitPolicy
from agent_wait.langgraph import (
    ahandle_message,
    handle_message,
    questions_in,
    resume_command,
    wait,
)
from tests.langgraph.conftest import ScriptedChat, answer, calls, check_envelope, model, namespace


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
        context={"framework": "langgraph", "node": "tools", "namespace": namespace("tools")},
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


def hand_built_graph(chat: ScriptedChat, tools: list[Any]) -> Any:
    """A hand-built tool loop: one node runs the turn's tool calls one after another."""
    by_name = {t.name: t for t in tools}

    def agent(state: MessagesState) -> MessagesState:
        return {"messages": [chat.invoke(state["messages"])]}

    def run_tools(state: MessagesState) -> MessagesState:
        last = state["messages"][-1]
        assert isinstance(last, AIMessage)
        return {"messages": [by_name[c["name"]].invoke(c) for c in last.tool_calls]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", run_tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=InMemorySaver())


TWO_GATED = calls(
    ("issue_refund", {"order_id": "o-3", "amount": 10}),
    ("close_account", {"account_id": "acc-9"}),
)
VERDICTS = {
    "issue_refund": {"action": "approve"},
    "close_account": {"action": "reject", "reason": "keep it open"},
}


def answer_each_in_turn(graph: Any, thread_id: str, inbox: MemoryAnnounce) -> Any:
    """Answer every question as it is published, each with its own verdict; redeliver each."""
    handled = handle_message(graph, start(thread_id), inbox)
    assert handled.outcome is Outcome.STARTED
    answered: list[str] = []
    while handled.parked:
        [question_id] = handled.question_ids  # under one task: one question at a time
        envelope = next(e for e in inbox.envelopes if e.question_id == question_id)
        function = envelope.question["function"]
        assert function not in answered  # each question is asked once
        answered.append(function)
        reply = answer(envelope, VERDICTS[function])
        handled = handle_message(graph, reply, inbox)
        assert handled.outcome is Outcome.RESUMED
        again = handle_message(graph, reply, inbox)  # a redelivered answer runs nothing
        assert again.outcome is Outcome.DUPLICATE
        assert again.question_ids == handled.question_ids
    assert sorted(answered) == ["close_account", "issue_refund"]
    return handled.result


@pytest.mark.parametrize("graph_of", [tool_node_graph, hand_built_graph], ids=["ToolNode", "loop"])
def test_two_gated_tools_in_one_turn_each_get_their_own_answer(
    graph_of: Any, inbox: MemoryAnnounce
) -> None:
    bank = Bank()
    chat = model(TWO_GATED, AIMessage("done"))
    graph = graph_of(chat, bank.tools())
    result = answer_each_in_turn(graph, "t4", inbox)
    # The refund was approved and ran once; the account was not closed; the model read both.
    assert bank.runs == [("issue_refund", 10)]
    results = tool_messages(result)
    assert results["issue_refund"].content == "refunded 10 on o-3"
    assert "keep it open" in str(results["close_account"].content)
    assert result["messages"][-1].content == "done"
    assert len({e.question_id for e in inbox.envelopes}) == 2


@pytest.mark.parametrize("graph_of", [tool_node_graph, hand_built_graph], ids=["ToolNode", "loop"])
def test_two_gated_tools_both_approved_run_once_each(graph_of: Any, inbox: MemoryAnnounce) -> None:
    bank = Bank()
    graph = graph_of(model(TWO_GATED, AIMessage("done")), bank.tools())
    handled = handle_message(graph, start("t4b"), inbox)
    while handled.parked:
        envelope = next(e for e in inbox.envelopes if e.question_id == handled.question_ids[0])
        handled = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert sorted(bank.runs) == [("close_account", "acc-9"), ("issue_refund", 10)]
    assert tool_messages(handled.result)["close_account"].content == "closed acc-9"


async def test_two_gated_tools_in_one_turn_async_tool_node(inbox: MemoryAnnounce) -> None:
    # The async ToolNode runs the calls with asyncio.gather; the refund's body awaits.
    bank = Bank()
    graph = tool_node_graph(model(TWO_GATED, AIMessage("done")), bank.tools(asynchronous=True))
    handled = await ahandle_message(graph, start("t5"), inbox)
    asked: list[str] = []
    while handled.parked:
        envelope = next(e for e in inbox.envelopes if e.question_id == handled.question_ids[0])
        asked.append(envelope.question["function"])
        reply = answer(envelope, {"action": "approve"})
        handled = await ahandle_message(graph, reply, inbox)
        assert handled.outcome is Outcome.RESUMED
        assert (await ahandle_message(graph, reply)).outcome is Outcome.DUPLICATE
    assert sorted(asked) == ["close_account", "issue_refund"]
    assert sorted(bank.runs) == [("close_account", "acc-9"), ("issue_refund", 10)]
    assert handled.result["messages"][-1].content == "done"


def test_a_plain_host_in_a_hand_built_loop_keeps_each_answer_with_its_call() -> None:
    # A host of one's own resumes with {question_id: answer} (not addressed): a call takes the
    # plain answer at its position, as LangGraph does (exact when calls run one after another),
    # and keeps it, so the approved tool does not run again when the next question is answered.
    bank = Bank()
    graph = hand_built_graph(model(TWO_GATED, AIMessage("done")), bank.tools())
    cfg: RunnableConfig = {"configurable": {"thread_id": "t6"}}
    result = graph.invoke({"messages": [("user", "go")]}, cfg)
    seen: list[str] = []
    while result.get("__interrupt__"):
        [pending] = result["__interrupt__"]
        function = pending.value["question"]["function"]
        seen.append(function)
        result = graph.invoke(Command(resume={pending.id: VERDICTS[function]}), cfg)
    assert seen == ["issue_refund", "close_account"]
    assert bank.runs == [("issue_refund", 10)]
    assert "keep it open" in str(tool_messages(result)["close_account"].content)
    assert result["messages"][-1].content == "done"


def test_an_answer_addressed_to_no_call_runs_nothing_and_is_asked_again() -> None:
    bank = Bank()
    graph = tool_node_graph(
        model(calls(("issue_refund", {"order_id": "o-6", "amount": 6})), AIMessage("done")),
        bank.tools(),
    )
    cfg: RunnableConfig = {"configurable": {"thread_id": "t6b"}}
    [pending] = graph.invoke({"messages": [("user", "go")]}, cfg)["__interrupt__"]
    elsewhere = {"__agent_wait__": {"to": "f" * 64, "answer": {"action": "approve"}}}
    [again] = graph.invoke(Command(resume={pending.id: elsewhere}), cfg)["__interrupt__"]
    assert bank.runs == []
    assert again.value == pending.value
    assert [i.id for i in graph.get_state(cfg).interrupts] == [again.id]
    done = graph.invoke(Command(resume={again.id: {"action": "approve"}}), cfg)
    assert bank.runs == [("issue_refund", 6)]
    assert done["messages"][-1].content == "done"


def test_an_unusable_answer_under_the_tool_node_is_refused_and_not_saved(
    inbox: MemoryAnnounce,
) -> None:
    bank = Bank()
    graph = tool_node_graph(model(TWO_GATED, AIMessage("done")), bank.tools())
    first = handle_message(graph, start("t6c"), inbox)
    [envelope] = first.report.envelopes
    bad = handle_message(graph, answer(envelope, {"action": "approve", "args": {"nope": 1}}))
    assert bad.outcome is Outcome.INVALID_ANSWER
    assert "nope" in (bad.detail or "")
    assert bank.runs == []
    good = handle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    assert good.outcome is Outcome.RESUMED
    assert len(bank.runs) == 1


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
        allowed_actions=[],
        source=None,
        context={"framework": "langgraph", "node": "tools", "namespace": namespace("tools")},
    )
    resumed = handle_message(graph, answer(envelope, "the visa"), inbox)
    assert tool_messages(resumed.result)["ask_customer"].content == "customer says the visa"


def test_create_agent_both_answers_in_one_resume(inbox: MemoryAnnounce) -> None:
    # create_agent asks both calls together (one task each): a host may resume with both
    # answers at once; each reaches its own call, and each body runs once.
    bank = Bank()
    graph = agent_graph(model(TWO_GATED, AIMessage("done")), bank.tools())
    started = handle_message(graph, start("t11"), inbox)
    assert len(started.question_ids) == 2
    cfg: RunnableConfig = {"configurable": {"thread_id": "t11"}}
    pending = graph.get_state(cfg)
    resume: dict[str, Any] = {}
    for envelope in started.report.envelopes:
        reply = answer(envelope, VERDICTS[envelope.question["function"]])
        resume.update(resume_command(reply, pending=pending).resume)
    done = graph.invoke(Command(resume=resume), cfg)
    assert bank.runs == [("issue_refund", 10)]
    assert "keep it open" in str(tool_messages(done)["close_account"].content)
    assert done["messages"][-1].content == "done"
    for envelope in started.report.envelopes:  # redelivered answers run nothing
        late = handle_message(graph, answer(envelope, {"action": "approve"}))
        assert late.outcome is Outcome.DUPLICATE
    assert bank.runs == [("issue_refund", 10)]


async def test_async_tool_node_keeps_a_slow_approved_body_while_the_other_tool_asks(
    inbox: MemoryAnnounce,
) -> None:
    # asyncio.gather gives up on the first interrupt; the approved refund is still awaiting.
    # The asking call waits for it, so its result is saved with its answer and it runs once.
    runs: list[str] = []

    @tool
    @wait
    async def issue_refund(order_id: str, amount: int) -> str:
        """Refund an order."""
        await asyncio.sleep(0.05)
        runs.append(order_id)
        return f"refunded {amount}"

    @tool
    @wait
    async def close_account(account_id: str) -> str:
        """Close an account."""
        runs.append(account_id)
        return f"closed {account_id}"

    graph = tool_node_graph(model(TWO_GATED, AIMessage("done")), [issue_refund, close_account])
    handled = await ahandle_message(graph, start("t12"), inbox)
    while handled.parked:
        envelope = next(e for e in inbox.envelopes if e.question_id == handled.question_ids[0])
        handled = await ahandle_message(graph, answer(envelope, {"action": "approve"}), inbox)
    await asyncio.sleep(0.1)  # a body left running by gather would land here
    assert sorted(runs) == ["acc-9", "o-3"]
    assert tool_messages(handled.result)["issue_refund"].content == "refunded 10"
