"""Real agents with offline models for the soak: the same two-question refund flow per framework.

Every thread asks two questions in sequence, both through ``@wait``:

1. ``issue_refund(order_id, amount)``: no decision parameter, so ``{"action": "approve"}`` runs
   the body and anything else is returned in its place;
2. ``notify_customer(order_id, decision)``: the body always runs and receives the whole answer.

Bodies append to a shared :class:`Ledger`, which is how the soak sees whether a body ran twice
and which answer it applied. Each host also reports, from the framework's own state and
independently of anything agent-wait published, which questions a thread is parked on: that is
the ground truth of "the questions asked".
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypedDict

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from strands import Agent as StrandsAgent
from strands import ToolContext, tool
from strands.models import Model as StrandsModel
from strands.session import FileSessionManager

from agent_wait.core import Announce, Handled, WaitPolicy
from agent_wait.langgraph import handle_message as langgraph_handle_message
from agent_wait.langgraph import wait as langgraph_wait
from agent_wait.pydantic_ai import InMemoryHistory
from agent_wait.pydantic_ai import handle_message as pydantic_ai_handle_message
from agent_wait.pydantic_ai import wait as pydantic_ai_wait
from agent_wait.strands import handle_message as strands_handle_message
from agent_wait.strands import wait as strands_wait

REFUND_POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject"},
    tags={"approver_group": "finance"},
)
NOTIFY_POLICY = WaitPolicy(
    timeout="PT4H", default={"action": "skip"}, allowed_actions=("send", "skip")
)


@dataclass
class Ledger:
    """What the gated bodies did, in order: ``(function, thread_id, decision or None)``."""

    runs: list[tuple[str, str, Any]] = field(default_factory=list[tuple[str, str, Any]])

    def count(self, function: str, thread_id: str) -> int:
        """How often ``function``'s body ran for a thread."""
        return sum(1 for f, t, _ in self.runs if f == function and t == thread_id)

    def decisions(self, function: str, thread_id: str) -> list[Any]:
        """The answers ``function``'s body received for a thread."""
        return [d for f, t, d in self.runs if f == function and t == thread_id]


class ThreadHost(Protocol):
    """One framework's host for the soak."""

    framework: str

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        """``handle_message(..., strict=True)`` of the framework package."""
        ...

    def pending(self, thread_id: str) -> set[str]:
        """The question ids the thread is parked on, read from the framework's own state."""
        ...

    def finished(self, thread_id: str) -> bool:
        """True when the thread ran to its end."""
        ...


class _RefundState(TypedDict, total=False):
    order_id: str
    amount: int
    refund: Any
    notice: Any


class LangGraphHost:
    """A two-node ``StateGraph`` on an ``InMemorySaver``; each node calls one ``@wait`` function."""

    framework = "langgraph"

    def __init__(self, ledger: Ledger) -> None:
        @langgraph_wait(REFUND_POLICY)
        def issue_refund(order_id: str, amount: int) -> str:
            ledger.runs.append(("issue_refund", order_id, None))
            return f"refunded {amount}"

        @langgraph_wait(NOTIFY_POLICY)
        def notify_customer(order_id: str, decision: Any = None) -> str:
            ledger.runs.append(("notify_customer", order_id, decision))
            return "notified"

        def refund(state: _RefundState) -> _RefundState:
            return {"refund": issue_refund(state["order_id"], state["amount"])}

        def notify(state: _RefundState) -> _RefundState:
            return {"notice": notify_customer(state["order_id"])}

        builder = StateGraph(_RefundState)
        builder.add_node("refund", refund)
        builder.add_node("notify", notify)
        builder.add_edge(START, "refund")
        builder.add_edge("refund", "notify")
        builder.add_edge("notify", END)
        self.graph = builder.compile(checkpointer=InMemorySaver())

    def _config(self, thread_id: str) -> Any:
        return {"configurable": {"thread_id": thread_id}}

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        """The LangGraph host, in one call."""
        return langgraph_handle_message(self.graph, message, announce, strict=True)

    def pending(self, thread_id: str) -> set[str]:
        """``get_state(...).interrupts``: LangGraph's own record of what the thread waits on."""
        return {i.id for i in self.graph.get_state(self._config(thread_id)).interrupts}

    def finished(self, thread_id: str) -> bool:
        """The graph reached END: it has values and no next node."""
        state = self.graph.get_state(self._config(thread_id))
        return bool(state.values) and not state.next and "notice" in state.values


def _order_of(messages: list[ModelMessage]) -> dict[str, Any]:
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return json.loads(part.content)
    raise AssertionError("no user prompt in the history")


def _called(messages: list[ModelMessage], tool: str) -> bool:
    return any(
        isinstance(m, ModelResponse) and any(c.tool_name == tool for c in m.tool_calls)
        for m in messages
    )


def _script(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """The offline model: refund first, then notify, then a final text.

    Tool call ids are what Pydantic AI publishes as question ids, so they must be unique, as a
    provider's are: they carry the order id.
    """
    del info
    order = _order_of(messages)
    order_id = order["order_id"]
    if not _called(messages, "issue_refund"):
        call = ToolCallPart(
            "issue_refund",
            {"order_id": order_id, "amount": order["amount"]},
            tool_call_id=f"call-refund-{order_id}",
        )
        return ModelResponse(parts=[call])
    if not _called(messages, "notify_customer"):
        call = ToolCallPart(
            "notify_customer", {"order_id": order_id}, tool_call_id=f"call-notify-{order_id}"
        )
        return ModelResponse(parts=[call])
    return ModelResponse(parts=[TextPart(f"done with {order_id}")])


class PydanticAiHost:
    """A Pydantic AI agent on a ``FunctionModel`` with two ``@wait`` tools; history in memory."""

    framework = "pydantic_ai"

    def __init__(self, ledger: Ledger) -> None:
        self.history = InMemoryHistory()
        agent = Agent(FunctionModel(_script), output_type=[str, DeferredToolRequests])

        @agent.tool
        @pydantic_ai_wait(REFUND_POLICY)
        def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
            ledger.runs.append(("issue_refund", order_id, None))
            return f"refunded {amount}"

        @agent.tool
        @pydantic_ai_wait(NOTIFY_POLICY)
        def notify_customer(ctx: RunContext[None], order_id: str, decision: Any = None) -> str:
            ledger.runs.append(("notify_customer", order_id, decision))
            return "notified"

        self.agent = agent

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        """The Pydantic AI host (load, run or resume, store, publish)."""
        return pydantic_ai_handle_message(
            self.agent, message, announce, history=self.history, strict=True
        )

    def pending(self, thread_id: str) -> set[str]:
        """Tool calls of the stored history's last response that have no result yet."""
        messages = self.history.load(thread_id)
        responses = [i for i, m in enumerate(messages) if isinstance(m, ModelResponse)]
        if not responses:
            return set()
        last = responses[-1]
        answered = {
            part.tool_call_id
            for message in messages[last + 1 :]
            for part in message.parts
            if isinstance(part, ToolReturnPart | RetryPromptPart)
        }
        response = messages[last]
        assert isinstance(response, ModelResponse)
        return {c.tool_call_id for c in response.tool_calls if c.tool_call_id not in answered}

    def finished(self, thread_id: str) -> bool:
        """The stored history ends in the model's final text."""
        messages = self.history.load(thread_id)
        return (
            bool(messages)
            and isinstance(messages[-1], ModelResponse)
            and not (messages[-1].tool_calls)
        )


class _StrandsScript(StrandsModel):
    """The offline Strands model: refund first, then notify, then a final text.

    Strands ships no mock model; this one streams the events a provider would. It reads the
    order from the first user message and derives its turn from the conversation, so a fresh
    Agent restored from the session plays on where the last one parked. ``toolUseId`` (part of
    the interrupt id agent-wait publishes) carries the order id, unique as a provider's ids are.
    """

    def update_config(self, **model_config: Any) -> None:
        del model_config

    def get_config(self) -> dict[str, Any]:
        return {"model_id": "reliability-script"}

    def structured_output(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("no structured output in the soak")

    async def stream(
        self, messages: Any, tool_specs: Any = None, system_prompt: Any = None, **kwargs: Any
    ) -> AsyncIterator[dict[str, Any]]:
        order = json.loads(messages[0]["content"][0]["text"])
        called = {
            block["toolUse"]["name"]
            for message in messages
            if message["role"] == "assistant"
            for block in message["content"]
            if "toolUse" in block
        }
        yield {"messageStart": {"role": "assistant"}}
        for name, args in (
            ("issue_refund", {"order_id": order["order_id"], "amount": order["amount"]}),
            ("notify_customer", {"order_id": order["order_id"]}),
        ):
            if name in called:
                continue
            start = {"toolUse": {"toolUseId": f"{name}-{order['order_id']}", "name": name}}
            yield {"contentBlockStart": {"start": start}}
            yield {"contentBlockDelta": {"delta": {"toolUse": {"input": json.dumps(args)}}}}
            yield {"contentBlockStop": {}}
            yield {"messageStop": {"stopReason": "tool_use"}}
            return
        yield {"contentBlockStart": {"start": {}}}
        yield {"contentBlockDelta": {"delta": {"text": f"done with {order['order_id']}"}}}
        yield {"contentBlockStop": {}}
        yield {"messageStop": {"stopReason": "end_turn"}}


class StrandsHost:
    """Strands agents on ``FileSessionManager`` sessions; a fresh Agent for every message."""

    framework = "strands"

    def __init__(self, ledger: Ledger, sessions: Path) -> None:
        @tool(context=True)
        @strands_wait(REFUND_POLICY)
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            ledger.runs.append(("issue_refund", order_id, None))
            return f"refunded {amount}"

        @tool(context=True)
        @strands_wait(NOTIFY_POLICY)
        def notify_customer(order_id: str, tool_context: ToolContext, decision: Any = None) -> str:
            """Tell the customer."""
            ledger.runs.append(("notify_customer", order_id, decision))
            return "notified"

        self.tools = [issue_refund, notify_customer]
        self.model = _StrandsScript()
        self.sessions = sessions

    def agent(self, thread_id: str) -> StrandsAgent:
        """The thread's agent, as a new process would build it."""
        return StrandsAgent(
            model=self.model,
            tools=self.tools,
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        """The Strands host (fresh agent on the thread's session, run, publish)."""
        return strands_handle_message(self.agent, message, announce, strict=True)

    def pending(self, thread_id: str) -> set[str]:
        """The restored agent's interrupt state: the interrupts that have no response yet."""
        state = self.agent(thread_id)._interrupt_state  # pyright: ignore[reportPrivateUsage]
        if not state.activated:
            return set()
        return {i.id for i in state.interrupts.values() if i.response is None}

    def finished(self, thread_id: str) -> bool:
        """The conversation ends in the model's final text."""
        messages = self.agent(thread_id).messages
        return (
            bool(messages)
            and any("text" in b for b in messages[-1]["content"])
            and (messages[-1]["role"] == "assistant")
        )
