"""Keep every answer with its own question, where LangGraph matches answers by call order.

LangGraph hands a task's resume values to its ``interrupt()`` calls in the order the calls run.
With one question per task that is exact. With several in one
task (two gated tools in one model turn under the prebuilt ``ToolNode``, or a node that calls
``@wait`` functions one after another) an answer can reach another call, and a call approved
earlier runs again each time the task is resumed. Two guards:

- **Addressed answers.** :func:`agent_wait.langgraph.handle_message` resumes a ``@wait``
  question with ``{"__agent_wait__": {"to": <call id>, "answer": ...}}``. The ``@wait`` call
  checks it inside ``interrupt()``'s ``response_schema`` validation: an answer addressed to
  another call, or one it cannot apply, is refused before LangGraph saves anything, and the
  call receives the plain answer otherwise.
- **One question per task.** While ``handle_message`` runs the graph, every ``@wait`` call logs
  what it did (asked, accepted an answer, refused one) under its task's checkpoint namespace.
  A question asked in a task where something else was asked or answered in the same run is
  refused with :class:`InterruptRoutingError` before it is published.
"""

from __future__ import annotations

import dataclasses
import inspect
import threading
from collections.abc import Iterable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from agent_wait.core import (
    AgentWaitError,
    WaitCall,
    apply_answer,
    derive_question_id,
    question_from_value,
)
from langgraph.config import get_config
from langgraph.types import Interrupt

ADDRESS_KEY = "__agent_wait__"
"""The key of an addressed resume value: ``{ADDRESS_KEY: {"to": call_id, "answer": answer}}``."""


class InterruptRoutingError(AgentWaitError):
    """LangGraph could give an answer to the wrong call or run an approved call again.

    Raised by :func:`agent_wait.langgraph.handle_message`, with nothing published, when a
    question is asked in a task that asked or answered another question in the same run (two
    gated tools in one model turn under the prebuilt ``ToolNode``; several ``@wait`` calls in
    one node), and when an addressed answer reached a ``@wait`` call it was not addressed to
    (refused before it was saved). Ask at most one question per task: use
    ``langchain.agents.create_agent`` (each tool call runs as its own task), let the model call
    one gated tool per turn, or give each ``@wait`` call its own node.
    """


class Misaddressed(ValueError):
    """An addressed answer reached another ``@wait`` call (raised inside ``response_schema``)."""


def as_mapping(value: Any) -> Mapping[str, Any] | None:
    """``value`` as a string-keyed mapping, or None."""
    return cast("Mapping[str, Any]", value) if isinstance(value, Mapping) else None


def call_id(thread_id: str, question: Mapping[str, Any]) -> str:
    """The address of a ``@wait`` question: ``sha256(thread_id | function | canonical args)``.

    It names the call itself, so it tells apart calls LangGraph gives one interrupt id.
    """
    return derive_question_id(thread_id, str(question["function"]), question.get("args") or {})


def address(thread_id: str, pending_value: Any, answer: Any) -> Any:
    """The resume value for ``answer`` to a pending interrupt: addressed if it is a ``@wait`` one.

    Bare interrupts and LangChain middleware interrupts get the answer verbatim.
    """
    # Only a @wait payload reads back with a source (see agent_wait.core.question_from_value).
    asked = question_from_value("pending", pending_value)
    question = as_mapping(asked.question)
    if asked.source is None or question is None or "function" not in question:
        return answer
    return {ADDRESS_KEY: {"to": call_id(thread_id, question), "answer": answer}}


def _unwrap(value: Any) -> tuple[Any, str | None]:
    outer = as_mapping(value)
    if outer is not None and len(outer) == 1:
        inner = as_mapping(outer.get(ADDRESS_KEY))
        if inner is not None and "answer" in inner and isinstance(inner.get("to"), str):
            return inner["answer"], str(inner["to"])
    return value, None


def _run_context() -> tuple[str, str, str | None]:
    """(thread_id, checkpoint namespace of the task, node name) of the running task."""
    try:
        config = get_config()
    except RuntimeError:
        return "", "", None
    configurable = config.get("configurable") or {}
    node = (config.get("metadata") or {}).get("langgraph_node")
    return (
        str(configurable.get("thread_id") or ""),
        str(configurable.get("checkpoint_ns") or ""),
        None if node is None else str(node),
    )


def accept(call: WaitCall, value: Any) -> Any:
    """Check a resume value before LangGraph saves it; return the answer the call receives.

    Raising here (a ``ValueError``) makes ``interrupt()`` raise a ``pydantic.ValidationError``
    marked as an invalid resume: nothing is saved and the question can be answered again.
    """
    answer, to = _unwrap(value)
    thread_id, task, node = _run_context()
    if to is not None:
        own = call_id(thread_id, call.payload["question"])
        if to != own:
            _log(Event("refused", task, node, call.name))
            raise Misaddressed(
                f"an answer addressed to another question reached {call.name!r} (addressed to "
                f"call {to[:16]}, this call is {own[:16]}); LangGraph matches answers by the order "
                "interrupt() runs in a task. Refused: nothing was saved or run"
            )
    # Apply to a copy: the real application happens after interrupt() returns.
    bound = inspect.BoundArguments(call.bound.signature, dict(call.bound.arguments))
    apply_answer(dataclasses.replace(call, bound=bound), answer, call.decision)
    _log(Event("answered", task, node, call.name))
    return answer


def asked(call: WaitCall, interrupts: Iterable[Interrupt]) -> None:
    """Log that ``call`` raised an interrupt (its id is the first one raised)."""
    first = next(iter(interrupts), None)
    if first is not None:
        _, task, node = _run_context()
        _log(Event("asked", task, node, call.name, first.id, call.payload))


@dataclass(frozen=True, eq=False)
class Event:
    """What one ``@wait`` call did in a task during a run."""

    kind: Literal["asked", "answered", "refused"]
    task: str
    node: str | None
    function: str
    interrupt_id: str | None = None
    payload: dict[str, Any] | None = None


@dataclass
class RunLog:
    """What the ``@wait`` calls of one run did, for :meth:`problems` after the run."""

    events: list[Event] = field(default_factory=list[Event])
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, event: Event) -> None:
        """Record one event (tasks run in threads)."""
        with self._lock:
            self.events.append(event)

    def problems(self, pending: Iterable[Interrupt]) -> list[str]:
        """Describe each pending question that is not the only question of its task."""
        problems: list[str] = []
        for item in pending:
            asks = [e for e in self.events if e.kind == "asked" and e.interrupt_id == item.id]
            if not asks:
                continue
            task = asks[0].task
            others = [e for e in self.events if e.task == task and e not in asks]
            hidden = [] if asks[0].payload == item.value else ["an interrupt() of other code"]
            if len(asks) == 1 and not others and not hidden:
                continue
            node = asks[0].node or "?"
            asked_names = [e.function for e in asks] + hidden
            done = [_DONE[e.kind].format(e.function) for e in others if e.kind != "asked"]
            problems.append(
                f"node {node!r} asked {', '.join(asked_names)} in a task that "
                + (f"also ran {', '.join(done)}" if done else "asked them at once")
            )
        return problems


_DONE = {"answered": "{} (which received its answer)", "refused": "{} (which refused one)"}

RUN_LOG: ContextVar[RunLog | None] = ContextVar("agent_wait_langgraph_run_log", default=None)
"""Set by ``handle_message`` around a run; LangGraph copies the context into every task."""


def _log(event: Event) -> None:
    log = RUN_LOG.get()
    if log is not None:
        log.add(event)
