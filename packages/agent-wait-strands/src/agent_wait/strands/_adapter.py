"""The Strands side of ``@wait``: park on ``tool_context.interrupt``, read questions from results."""

from __future__ import annotations

import inspect
import uuid
from collections.abc import Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.core import CallContext, Question, derive_question_id, to_jsonable
from agent_wait.host.adapter import IN_DOUBT_FUNCTION, WaitCall, question_from_value
from agent_wait.strands import _compat
from strands.agent.agent_result import AgentResult
from strands.interrupt import Interrupt
from strands.multiagent.base import MultiAgentBase, MultiAgentResult, Status
from strands.types.content import Message
from strands.types.tools import ToolContext

INTERRUPT_PREFIX = "agent_wait:"
"""Interrupt names of ``@wait`` calls are ``agent_wait:<function>``."""

# Strands injects these by name whatever their annotation (``agent`` for backward
# compatibility, ``tool_context`` as the default name of @tool(context=True)).
_INJECTED_NAMES = frozenset({"tool_context", "agent"})


def interrupt_name(function: str) -> str:
    """The Strands interrupt name a ``@wait`` call of ``function`` parks under."""
    return f"{INTERRUPT_PREFIX}{function}"


def _is_tool_context(annotation: Any) -> bool:
    if annotation is ToolContext:
        return True
    # Under `from __future__ import annotations` the signature holds the annotation text.
    return isinstance(annotation, str) and annotation.rpartition(".")[2] == "ToolContext"


def context_parameters(signature: inspect.Signature) -> frozenset[str]:
    """The parameters Strands fills in itself: never published, never the model's to set."""
    return frozenset(
        name
        for name, param in signature.parameters.items()
        if name in _INJECTED_NAMES or _is_tool_context(param.annotation)
    )


def has_tool_context(signature: inspect.Signature) -> bool:
    """True when the function declares a parameter Strands fills with its ``ToolContext``."""
    return any(
        name == "tool_context" or _is_tool_context(param.annotation)
        for name, param in signature.parameters.items()
    )


def _tool_context(call: WaitCall) -> ToolContext[Any]:
    for value in call.bound.arguments.values():
        if isinstance(value, ToolContext):
            return cast("ToolContext[Any]", value)
    raise TypeError(
        f"@wait on {call.name!r} was called without a ToolContext; it must run as a Strands tool "
        "declared with @tool(context=True) and a `tool_context: ToolContext` parameter"
    )


_BEFORE_TOOLS_PREFIX = "v1:before_tools:"


def context_of(interrupt: Interrupt, messages: Sequence[Message]) -> CallContext | None:
    """The tool call an interrupt was raised for, from the messages that made the call.

    Tool and hook interrupt ids embed the call's id (``v1:tool_call:<toolUseId>:<uuid>``,
    ``v1:before_tool_call:...``); the assistant message holding that ``toolUse`` names the
    tool. A ``BeforeToolsEvent`` interrupt (``v1:before_tools:<uuid>``) is for the whole batch
    of the parked assistant message (the last one): when that message makes one tool call, the
    interrupt is for that call; with several, no single call asked, and it is None.
    """
    if interrupt.id.startswith(_BEFORE_TOOLS_PREFIX):
        last = messages[-1]["content"] if messages else []
        batch = [block["toolUse"] for block in last if "toolUse" in block]
        if len(batch) != 1:
            return None
        return CallContext(tool=batch[0]["name"], tool_call_id=batch[0]["toolUseId"])
    for message in reversed(messages):  # the parked call is in one of the last messages
        for block in message["content"]:
            tool_use = block.get("toolUse")
            if tool_use is not None and f":{tool_use['toolUseId']}:" in interrupt.id:
                return CallContext(tool=tool_use["name"], tool_call_id=tool_use["toolUseId"])
    return None


_NODE_HOOK_PREFIX = "v1:before_node_call:"


@dataclass(frozen=True)
class Site:
    """Where in a ``Swarm`` or ``Graph`` an interrupt was raised.

    Attributes:
        path: The node ids from the outer run to the node that asked (one for a node of the
            run itself; more for a node of a Swarm or Graph nested in a node).
        messages: The asking node agent's messages, to find its tool call in (empty when
            unknown).
    """

    path: tuple[str, ...]
    messages: Sequence[Message] = ()

    def context(self, interrupt: Interrupt) -> CallContext:
        """The interrupt's context: the node, the nested path, and the tool call if found."""
        node = self.path[-1]
        call = context_of(interrupt, self.messages) or CallContext(node=node)
        namespace = "|".join(self.path) if len(self.path) > 1 else None
        return call.model_copy(update={"node": node, "namespace": namespace})


def result_sites(result: MultiAgentResult, path: tuple[str, ...] = ()) -> dict[str, Site]:
    """Where each interrupt a node's result reports was raised, nested results included."""
    sites: dict[str, Site] = {}
    for node_id, node in result.results.items():
        here = (*path, node_id)
        if isinstance(node.result, MultiAgentResult):
            sites.update(result_sites(node.result, here))
        elif isinstance(node.result, AgentResult):
            for interrupt in node.result.interrupts or ():
                sites[interrupt.id] = Site(here, [node.result.message])
    return sites


def node_context(
    interrupt: Interrupt,
    nodes: Mapping[str, Sequence[Message]],
    sites: Mapping[str, Site] | None = None,
) -> CallContext | None:
    """Which node of a ``Swarm`` or ``Graph`` asked.

    ``sites`` (by interrupt id) says where each interrupt the run recorded was raised, nested
    runs included. Otherwise: a node's tool interrupt is found by its tool call in that node
    agent's messages (see :func:`context_of`); a ``BeforeNodeCallEvent`` hook's id embeds
    ``uuid5(node id)``.
    """
    site = (sites or {}).get(interrupt.id)
    if site is not None:
        return site.context(interrupt)
    for node_id, messages in nodes.items():
        context = context_of(interrupt, messages)
        if context is not None and not interrupt.id.startswith(_BEFORE_TOOLS_PREFIX):
            return context.model_copy(update={"node": node_id})
        hook = f"{_NODE_HOOK_PREFIX}{uuid.uuid5(uuid.NAMESPACE_OID, node_id)}:"
        if interrupt.id.startswith(hook):
            return CallContext(node=node_id)
    return None


def question_of(interrupt: Interrupt, messages: Sequence[Message] = ()) -> Question:
    """The question one Strands interrupt asks.

    A ``@wait`` interrupt (named ``agent_wait:<function>``) carries the parked payload as its
    reason: its question, policy and source. Any other interrupt (a bare
    ``tool_context.interrupt(name, reason=...)`` or a hook's ``event.interrupt``) asks
    ``{"name": name, "reason": reason}`` with no allowed actions (the code that asked never said
    which responses it takes): the name is kept because it is what tells one interrupt of a
    tool from another, and ``reason`` is optional in Strands. The tool call found in
    ``messages`` (see :func:`context_of`) becomes ``context``.
    """
    asked = _question_of(interrupt)
    context = context_of(interrupt, messages)
    return asked if context is None else asked.model_copy(update={"context": context})


def _question_of(interrupt: Interrupt) -> Question:
    if interrupt.name.startswith(INTERRUPT_PREFIX):
        return question_from_value(interrupt.id, interrupt.reason)
    reason = to_jsonable(interrupt.reason, f"interrupt {interrupt.name!r} reason")
    return question_from_value(interrupt.id, {"name": interrupt.name, "reason": reason})


def questions_of(
    interrupts: Iterable[Interrupt], messages: Sequence[Message] = ()
) -> list[Question]:
    """The questions of several interrupts (``messages``: the agent's, for context).

    In the order the model made the tool calls: Strands runs a message's tools concurrently,
    so the order its interrupts are collected in changes from run to run.
    """
    asked = [question_of(interrupt, messages) for interrupt in interrupts]
    calls = [
        block["toolUse"]["toolUseId"]
        for message in messages
        for block in message["content"]
        if "toolUse" in block
    ]

    def call_order(question: Question) -> int:
        call_id = question.context.tool_call_id if question.context else None
        return calls.index(call_id) if call_id in calls else len(calls)

    return sorted(asked, key=call_order)


def node_questions(
    interrupts: Iterable[Interrupt],
    nodes: Mapping[str, Sequence[Message]],
    sites: Mapping[str, Site] | None = None,
) -> list[Question]:
    """The questions of a multi-agent run's interrupts, each with the node that asked."""
    questions: list[Question] = []
    for interrupt in interrupts:
        asked = _question_of(interrupt)
        context = node_context(interrupt, nodes, sites)
        questions.append(
            asked if context is None else asked.model_copy(update={"context": context})
        )
    return questions


def questions_in(result: AgentResult | MultiAgentResult) -> list[Question]:
    """The questions a Strands run is parked on, in the order Strands reports them.

    Args:
        result: What ``agent(...)`` or ``await agent.invoke_async(...)`` returned, or what a
            ``Swarm`` or ``Graph`` call returned (a ``MultiAgentResult``: the interrupts of
            every node that parked, and of ``BeforeNodeCallEvent`` hooks).

    Returns:
        One :class:`~agent_wait.core.Question` per interrupt when ``result.stop_reason`` is
        ``"interrupt"`` (a multi-agent ``result.status`` is ``Status.INTERRUPTED``); an empty
        list for a run that finished. ``question_id`` is the interrupt's id, the one the
        answer's ``interruptResponse`` must name.

    Raises:
        TypeError: ``result`` is neither a Strands ``AgentResult`` nor a ``MultiAgentResult``.
    """
    if isinstance(result, MultiAgentResult):
        if result.status is not Status.INTERRUPTED:
            return []
        # Each node that ran ended with its agent's last message: the tool calls that asked.
        nodes = {
            node_id: [node.result.message]
            for node_id, node in result.results.items()
            if isinstance(node.result, AgentResult)
        }
        return node_questions(result.interrupts, nodes, result_sites(result))
    if not isinstance(result, AgentResult):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise TypeError(
            "result: expected the strands AgentResult an agent call returned or the "
            f"MultiAgentResult of a Swarm or Graph, got {type(result).__name__}"
        )
    if result.stop_reason != "interrupt":
        return []
    # A run that parks ends with the assistant message whose tool calls asked.
    return questions_of(result.interrupts or (), [result.message])


_RUNNING: ContextVar[tuple[str, Any] | None] = ContextVar(
    "agent_wait_strands_running", default=None
)
"""The thread id and runner (an Agent, a Swarm or a Graph) of the host's run under way."""


@contextmanager
def running(thread_id: str, runner: Any) -> Generator[None]:
    """Name the thread and the runner of the runs inside (the host's), for execution keys."""
    previous = _RUNNING.get()
    _RUNNING.set((thread_id, runner))
    try:
        yield
    finally:
        # Set back, not reset by token: a stream may be closed from another context.
        _RUNNING.set(previous)


def node_path(runner: MultiAgentBase, agent: object) -> tuple[str, ...] | None:
    """The node ids leading to the node whose agent is ``agent`` (nested runs walked), or None."""
    nodes: Mapping[str, Any] = getattr(runner, "nodes", {})
    for node_id, node in nodes.items():
        executor = getattr(node, "executor", None)
        if executor is agent:
            return (node_id,)
        if isinstance(executor, MultiAgentBase):
            inner = node_path(executor, agent)
            if inner is not None:
                return (node_id, *inner)
    return None


def _execution_place(agent: Any) -> str | None:
    """Where a tool call of ``agent`` is answered: the same in every redelivery, or None.

    An agent with a session manager: its session and agent id. Otherwise the host's thread:
    a node agent of the Swarm or Graph the host runs, by its node path (the runner's session
    restores the node's pending call), or the single agent the host runs (its state lives in
    the process, so a record of it serves a redelivery to that process, which is what keeps
    the body to one run there).
    """
    if _compat.session_manager(agent) is not None:
        return f"{agent.session_id}|{agent.agent_id}"
    found = _RUNNING.get()
    if found is None:
        return None
    thread_id, runner = found
    if runner is agent:
        return f"{thread_id}|{agent.agent_id}"
    if isinstance(runner, MultiAgentBase):
        path = node_path(runner, agent)
        if path is not None:
            return f"{thread_id}|{type(runner).__name__}|{'|'.join(path)}"
    return None


_ASKING: ContextVar[ToolContext[Any] | None] = ContextVar("agent_wait_strands_asking", default=None)
"""The ToolContext of the ``@wait`` call that parked last in this context (a tool's run)."""


class StrandsAdapter:
    """:class:`agent_wait.host.adapter.FrameworkAdapter` for Strands Agents tools.

    A ``@wait`` tool parks by calling ``tool_context.interrupt("agent_wait:<function>",
    reason=<parked payload>)``; Strands stops the run with ``stop_reason == "interrupt"``, and on
    resume runs the tool again from the start, where the same call returns the response.
    """

    name = "strands"

    def park(self, call: WaitCall) -> Any:
        """Raise the Strands interrupt, or return its response on resume.

        An in-doubt question (a run died inside the approved body) parks under a name of its
        own per attempt: Strands derives the interrupt id from the tool call and the name, and
        the call's first interrupt, under ``agent_wait:<function>``, holds the approval.
        """
        name = interrupt_name(call.name)
        if call.payload["question"].get("function") == IN_DOUBT_FUNCTION:
            # Its arguments are the in-doubt question's: the tool call's context is the one
            # its approval parked with, just before, in this same call of the tool.
            context = _ASKING.get()
            if context is None:
                raise RuntimeError(f"@wait on {call.name!r}: an in-doubt question outside its call")
            name = f"{name}:{IN_DOUBT_FUNCTION}:{call.args['attempt']}"
        else:
            context = _tool_context(call)
            _ASKING.set(context)
        return context.interrupt(name, reason=call.payload)

    async def apark(self, call: WaitCall) -> Any:
        """Async :meth:`park` (Strands' interrupt is synchronous: it raises or returns)."""
        return self.park(call)

    def execution_key(self, call: WaitCall) -> str | None:
        """The answered question of ``call``: where it is answered, its tool use id and function.

        Where: the agent's session and agent id; for an agent without a session manager, the
        host's thread and the agent's place in what the host runs (see
        :func:`_execution_place`). A redelivery resumes the same tool call there, so the key
        is the same. None outside a host for an agent without a session manager: its session
        id is made up anew by each process.
        """
        context = _tool_context(call)
        where = _execution_place(context.agent)
        if where is None:
            return None
        return derive_question_id(where, call.name, {"tool_use_id": context.tool_use["toolUseId"]})

    def thread_id(self, call: WaitCall) -> str:
        """The agent's ``session_id``: the session manager's id, which the host sets to the thread id."""
        agent = _tool_context(call).agent
        session_id = getattr(agent, "session_id", None)
        if not isinstance(session_id, str) or not session_id:
            raise TypeError(
                f"@wait(mode='async') on {call.name!r}: the agent running it "
                f"({type(agent).__name__}) has no session_id to use as the thread id"
            )
        return session_id

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        """``tool_context``, any ``ToolContext``-annotated parameter, and ``agent``."""
        return context_parameters(signature)

    def questions_in(self, result: Any) -> list[Question]:
        """See :func:`questions_in`."""
        return questions_in(result)
