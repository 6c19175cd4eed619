"""The LangGraph side of ``@wait``: park on ``interrupt()``, read questions out of results."""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast, get_origin

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolArg

from agent_wait.core import CallContext, Question, WaitPolicy
from agent_wait.host.adapter import WaitCall, edited_args_schema, question_from_value
from agent_wait.langgraph._compat import PUSH, TASKS
from agent_wait.langgraph._routing import apark, as_mapping, execution_key, park
from langgraph.config import get_config
from langgraph.prebuilt import ToolRuntime
from langgraph.types import GraphOutput, Interrupt, PregelTask, Send, StateSnapshot

# What LangGraph injects into nodes (langgraph._internal._runnable.KWARGS_CONFIG_KEYS) and
# LangChain into tools: `previous`, `runtime` and `callbacks` whatever their annotation;
# `config`, `writer` and `store` when unannotated or annotated with their types; and any
# RunnableConfig, ToolRuntime or Injected* (InjectedState, InjectedStore, InjectedToolCallId).
_INJECTED_ANY_TYPE = frozenset({"previous", "runtime", "callbacks"})
_INJECTED_BY_NAME = frozenset({"config", "writer", "store"})
_INJECTED_TYPE_NAMES = ("RunnableConfig", "ToolRuntime", "Injected", "BaseStore", "StreamWriter")


def _is_injected(param: inspect.Parameter) -> bool:
    if param.name in _INJECTED_ANY_TYPE:
        return True
    annotation = param.annotation
    if annotation is inspect.Parameter.empty:
        return param.name in _INJECTED_BY_NAME
    if isinstance(annotation, str):
        # `from __future__ import annotations`: only the annotation text is available.
        return any(name in annotation for name in _INJECTED_TYPE_NAMES)
    if annotation is RunnableConfig:
        return True
    base = get_origin(annotation) or annotation
    if isinstance(base, type) and issubclass(base, ToolRuntime):
        return True
    metadata: tuple[Any, ...] = getattr(annotation, "__metadata__", ())
    if any(
        isinstance(m, InjectedToolArg) or (isinstance(m, type) and issubclass(m, InjectedToolArg))
        for m in metadata
    ):
        return True
    # `config: RunnableConfig | None`, `store: BaseStore`, `writer: StreamWriter` (a Callable).
    text = repr(annotation)
    return param.name in _INJECTED_BY_NAME and any(
        name in text for name in ("RunnableConfig", "BaseStore", "Callable")
    )


def _decision_types(schema: Any) -> list[str]:
    """The decision types a per-call ``response_schema`` allows, in order."""
    root = as_mapping(schema) or {}
    # Several decisions: a discriminated union; one decision: that decision's object schema.
    mapping = as_mapping((as_mapping(root.get("discriminator")) or {}).get("mapping"))
    if mapping is not None:
        return [str(kind) for kind in mapping]
    kind = (as_mapping((as_mapping(root.get("properties")) or {}).get("type")) or {}).get("const")
    return [kind] if isinstance(kind, str) else []


def is_batch_request(value: Any) -> bool:
    """True for a ``HumanInTheLoopMiddleware`` batched interrupt value (a ``HITLRequest``)."""
    data = as_mapping(value)
    return (
        data is not None
        and isinstance(data.get("action_requests"), list)
        and isinstance(data.get("review_configs"), list)
    )


def is_tool_approval(value: Any) -> bool:
    """True for a ``HumanInTheLoopMiddleware`` per-call interrupt value (a ``ToolApprovalRequest``)."""
    data = as_mapping(value)
    return data is not None and data.get("type") == "tool_approval" and "tool_call_id" in data


def batch_actions(value: Mapping[str, Any]) -> list[dict[str, Any]]:
    """One entry per action request: name, args, description and its allowed decisions."""
    requests = cast("list[Mapping[str, Any]]", value["action_requests"])
    configs = cast("list[Mapping[str, Any]]", value["review_configs"])
    by_name = {c.get("action_name"): c for c in configs}
    actions: list[dict[str, Any]] = []
    for index, request in enumerate(requests):
        # The middleware writes one review config per request, in order; match by name otherwise.
        config = (
            configs[index]
            if len(configs) == len(requests)
            else by_name.get(request.get("name"), {})
        )
        actions.append(
            {
                "name": request.get("name"),
                "args": request.get("args", {}),
                "description": request.get("description"),
                "allowed_decisions": list(config.get("allowed_decisions") or []),
            }
        )
    return actions


def _decision_schema(kind: str, action: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one middleware decision of ``kind`` on ``action``."""
    properties: dict[str, Any] = {"type": {"const": kind}}
    required = ["type"]
    if kind == "edit":
        args = cast("Mapping[str, Any]", as_mapping(action.get("args")) or {})
        properties["edited_action"] = {
            "type": "object",
            "properties": {
                "name": {"const": action.get("name")},
                "args": edited_args_schema(args),
            },
            "required": ["name", "args"],
        }
        required.append("edited_action")
    elif kind in ("reject", "respond"):
        properties["message"] = {"type": "string"}
        if kind == "respond":
            required.append("message")
    return {"type": "object", "properties": properties, "required": required}


def batch_schema(actions: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The JSON Schema of the answer to a middleware batch: one allowed decision per action.

    ``{"decisions": [...]}``, in the actions' order; each decision one of its action's
    ``allowed_decisions``; an edit names the action and its arguments (each keeps its JSON type),
    a respond carries the reply text, a reject may carry one.
    """
    items = [
        {"oneOf": [_decision_schema(kind, action) for kind in action["allowed_decisions"]]}
        for action in actions
    ]
    return {
        "type": "object",
        "description": "One decision per action, in order, each of the action's allowed_decisions.",
        "properties": {
            "decisions": {
                "type": "array",
                "prefixItems": items,
                "minItems": len(items),
                "maxItems": len(items),
            },
            "action": {"type": "string"},
        },
        "required": ["decisions"],
    }


# Agent Inbox's ``HumanInterruptConfig`` switches and the ``HumanResponse.type`` each allows,
# in the order the inbox offers them.
_INBOX_RESPONSES = (
    ("allow_accept", "accept"),
    ("allow_edit", "edit"),
    ("allow_respond", "response"),
    ("allow_ignore", "ignore"),
)
# The ``args`` of each ``HumanResponse`` type: nothing, the edited action, or the reply text.
_INBOX_ARGS: dict[str, dict[str, Any]] = {
    "accept": {"type": "null"},
    "ignore": {"type": "null"},
    "response": {"type": "string"},
    "edit": {
        "type": "object",
        "properties": {"action": {"type": "string"}, "args": {"type": "object"}},
        "required": ["action", "args"],
    },
}


def is_inbox_request(value: Any) -> bool:
    """True for an Agent Inbox interrupt: a non-empty list of ``HumanInterrupt`` objects."""
    if not isinstance(value, list) or not value:
        return False
    for entry in cast("list[Any]", value):
        data = as_mapping(entry)
        if data is None or as_mapping(data.get("action_request")) is None:
            return False
        if as_mapping(data.get("config")) is None:
            return False
    return True


def _inbox_types(entry: Mapping[str, Any]) -> list[str]:
    config = as_mapping(entry.get("config")) or {}
    return [kind for switch, kind in _INBOX_RESPONSES if config.get(switch) is True]


def _inbox_schema(requests: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """The JSON Schema of the answer to an Agent Inbox interrupt: one response per request."""
    items: list[dict[str, Any]] = []
    for entry in requests:
        kinds = _inbox_types(entry)
        if not kinds:
            return None  # a request that allows nothing: no answer is known to fit
        items.append(
            {
                "oneOf": [
                    {
                        "type": "object",
                        "properties": {"type": {"const": kind}, "args": _INBOX_ARGS[kind]},
                        "required": ["type"],
                    }
                    for kind in kinds
                ]
            }
        )
    return {
        "type": "array",
        "prefixItems": items,
        "minItems": len(items),
        "maxItems": len(items),
    }


def answer_schema_of(item: Interrupt) -> dict[str, Any] | None:
    """The JSON Schema an answer to ``item`` must match, or None when none is known.

    ``interrupt(value, response_schema=...)`` surfaces its schema on the interrupt; an Agent
    Inbox request's follows from its config (one ``HumanResponse`` per request, of an allowed
    type).
    """
    if is_inbox_request(item.value):
        return _inbox_schema(cast("list[Mapping[str, Any]]", item.value))
    schema = as_mapping(item.response_schema)
    # `{}` accepts anything: it states nothing (a @wait call parks with such a schema).
    return dict(schema) if schema else None


# A task created by a Send has path (PUSH, index): the index of its Send in the step's
# checkpoint, channel TASKS.
TASKS_CHANNEL = TASKS


def sends_needed(snapshot: StateSnapshot) -> list[RunnableConfig]:
    """The checkpoints (one per graph level) whose Sends tell which tool call a task runs.

    Only levels with an asking task created by a Send are listed: a ``create_agent`` tool call,
    a ``Send`` fan-out. Read each one's ``channel_values[TASKS_CHANNEL]`` for :func:`contexts_in`.
    """
    configs: list[RunnableConfig] = []
    if any(t.interrupts and _send_index(t) is not None for t in snapshot.tasks):
        configs.append(snapshot.config)
    for task in snapshot.tasks:
        if isinstance(task.state, StateSnapshot):
            configs.extend(sends_needed(task.state))
    return configs


def _send_index(task: PregelTask) -> int | None:
    """Which of its step's Sends created ``task``; None for a task of an edge."""
    # PregelTask.path's nested tuples are unparametrised: pyright reads them as unknown.
    path: tuple[object, ...] = cast("Any", task).path
    index = path[1] if len(path) > 1 and path[0] == PUSH else None
    return index if isinstance(index, int) else None


def _tool_call(task: PregelTask, sends: Sequence[Any]) -> Mapping[str, Any] | None:
    """The tool call a Send-created task runs, if its Send carries exactly one."""
    index = _send_index(task)
    if index is None or not 0 <= index < len(sends):
        return None
    send = sends[index]
    arg: Any = send.arg if isinstance(send, Send) else None
    # create_agent sends a list of one call, or a ToolCallWithContext wrapping it.
    if isinstance(arg, list) and len(cast("list[Any]", arg)) == 1:
        arg = cast("list[Any]", arg)[0]
    call = as_mapping(arg)
    if call is not None and call.get("type") != "tool_call":
        call = as_mapping(call.get("tool_call"))
    if call is None or call.get("type") != "tool_call":
        return None
    return call


def contexts_in(
    snapshot: StateSnapshot, sends: Mapping[str, Sequence[Any]] | None = None
) -> dict[str, CallContext]:
    """Where each pending interrupt was asked: by interrupt id, the innermost asking task.

    ``node`` is the asking task's node, ``namespace`` its ``checkpoint_ns`` (``|``-separated
    ``node:task_id`` entries, outermost first; what ``get_config()`` shows inside the node).
    Nested graphs are only seen in a snapshot read with ``get_state(config, subgraphs=True)``.
    ``sends`` (each level's Sends by its ``checkpoint_ns``, see :func:`sends_needed`) adds the
    tool name and tool call id of a task that runs one tool call.
    """
    found: dict[str, CallContext] = {}
    parent = str((snapshot.config.get("configurable") or {}).get("checkpoint_ns") or "")
    level_sends = (sends or {}).get(parent, ())
    for task in snapshot.tasks:
        if not task.interrupts:
            continue
        namespace = f"{parent}|{task.name}:{task.id}" if parent else f"{task.name}:{task.id}"
        call = _tool_call(task, level_sends)
        context = CallContext(
            node=task.name,
            namespace=namespace,
            tool=None if call is None else str(call.get("name")),
            tool_call_id=None if call is None or not call.get("id") else str(call.get("id")),
        )
        found.update((item.id, context) for item in task.interrupts)
        if isinstance(task.state, StateSnapshot):
            # The nested graph's own tasks asked: theirs is the closer context.
            found.update(contexts_in(task.state, sends))
    return found


def question_of(item: Interrupt, context: CallContext | None = None) -> Question:
    """The question one LangGraph ``Interrupt`` asks.

    A ``@wait`` payload gives its question, policy and source; a ``HumanInTheLoopMiddleware``
    batch becomes ``{"actions": [...]}`` with the union of the allowed decisions as
    ``allowed_actions``; a per-call approval is published as is, with its allowed decisions; an
    Agent Inbox request (a list of ``HumanInterrupt``) as is, with the response types its
    config allows. Any other value is the question itself, with no source and no allowed
    actions: the code that asked never said which answers it takes. Whatever answer schema the
    interrupt carries (see :func:`answer_schema_of`) becomes ``answer_schema``, and ``context``
    (see :func:`contexts_in`) the envelope's ``context``.
    """
    asked = _question_of(item)
    return asked if context is None else asked.model_copy(update={"context": context})


def _question_of(item: Interrupt) -> Question:
    value = item.value
    if is_batch_request(value):
        actions = batch_actions(value)
        allowed = list(dict.fromkeys(d for a in actions for d in a["allowed_decisions"]))
        asked = question_from_value(item.id, {"actions": actions})
        asked = asked.model_copy(update={"answer_schema": batch_schema(actions)})
    elif is_tool_approval(value):
        allowed = _decision_types(item.response_schema)
        asked = question_from_value(item.id, value)
    elif is_inbox_request(value):
        requests = cast("list[Mapping[str, Any]]", value)
        allowed = list(dict.fromkeys(k for entry in requests for k in _inbox_types(entry)))
        asked = question_from_value(item.id, value)
    else:
        asked = question_from_value(item.id, value)
        schema = None if asked.source is not None else answer_schema_of(item)
        return asked if schema is None else asked.model_copy(update={"answer_schema": schema})
    update: dict[str, Any] = {}
    if asked.answer_schema is None:
        update["answer_schema"] = answer_schema_of(item)
    if allowed:
        update["policy"] = WaitPolicy(allowed_actions=tuple(allowed))
    return asked.model_copy(update=update)


def interrupts_in(result: Any) -> list[Interrupt]:
    """The interrupts a LangGraph result is parked on.

    Accepts the ``invoke()`` dict (``"__interrupt__"``), a ``GraphOutput`` (``version="v2"``), a
    ``StateSnapshot`` (``graph.get_state(config)``), an ``Interrupt`` or a list of them.

    Raises:
        TypeError: Anything else.
    """
    if isinstance(result, GraphOutput):
        items: Any = result.interrupts
    elif isinstance(result, StateSnapshot):
        items = result.interrupts
    elif isinstance(result, Interrupt):
        items = [result]
    elif isinstance(result, Mapping):
        items = cast("Mapping[str, Any]", result).get("__interrupt__", ())
    elif isinstance(result, list | tuple):
        items = cast("Sequence[Any]", result)
    else:
        raise TypeError(
            "result: expected the invoke() dict, a GraphOutput, a StateSnapshot or a list of "
            f"Interrupt, got {type(result).__name__}"
        )
    interrupts = list(cast("Iterable[Any]", items))
    for index, entry in enumerate(interrupts):
        if not isinstance(entry, Interrupt):
            raise TypeError(
                f"result interrupts[{index}]: expected a langgraph Interrupt, got {entry!r}"
            )
    return cast("list[Interrupt]", interrupts)


def questions_in(result: Any, contexts: Mapping[str, CallContext] | None = None) -> list[Question]:
    """The questions a LangGraph run is parked on, in order.

    Args:
        result: The ``invoke()`` dict (with ``"__interrupt__"``), a ``GraphOutput`` from
            ``invoke(..., version="v2")``, a ``StateSnapshot``, or a list of ``Interrupt``.
        contexts: Where each interrupt was asked, by id (see :func:`contexts_in`). None: from
            ``result`` itself when it is a ``StateSnapshot`` (its tasks tell the node and
            namespace), else none.

    Returns:
        One :class:`~agent_wait.core.Question` per interrupt; ``question_id`` is ``Interrupt.id``.
    """
    if contexts is None and isinstance(result, StateSnapshot):
        contexts = contexts_in(result)
    known = contexts or {}
    return [question_of(item, known.get(item.id)) for item in interrupts_in(result)]


class LangGraphAdapter:
    """:class:`agent_wait.host.adapter.FrameworkAdapter` for LangGraph: parks on ``interrupt()``."""

    name = "langgraph"

    def park(self, call: WaitCall) -> Any:
        """Return the answer addressed to this call in its task, or raise LangGraph's interrupt.

        See ``agent_wait.langgraph._routing``: answers are found by the call's address, not by
        the order the task's calls run, and are checked before anything is saved.
        """
        return park(call)

    async def apark(self, call: WaitCall) -> Any:
        """Same as :meth:`park`; an asking call first lets its siblings' bodies finish."""
        return await apark(call)

    def execution_key(self, call: WaitCall) -> str | None:
        """The answered question of ``call``: its task (namespace with the task id) and address.

        A redelivery resumes the same checkpoint, so its task, and this key, are the same.
        """
        return execution_key(call)

    def thread_id(self, call: WaitCall) -> str:
        """The run's ``configurable.thread_id``."""
        try:
            configurable = get_config().get("configurable") or {}
        except RuntimeError as error:
            raise RuntimeError(
                f"@wait(mode='async') {call.name!r} was called outside a LangGraph run; it "
                "needs the run's thread_id to derive its question id"
            ) from error
        thread_id = configurable.get("thread_id")
        if thread_id is None or thread_id == "":
            raise ValueError(
                f"@wait(mode='async') {call.name!r}: the run config has no thread_id; invoke with "
                "{'configurable': {'thread_id': ...}}"
            )
        return str(thread_id)

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        """Parameters LangGraph or LangChain inject (config, runtime, store, injected tool args)."""
        return frozenset(
            name for name, param in signature.parameters.items() if _is_injected(param)
        )

    def questions_in(self, result: Any) -> list[Question]:
        """See :func:`questions_in`."""
        return questions_in(result)


def check_not_a_tool(function: Any) -> None:
    """Refuse ``@wait`` over an already-built LangChain tool (it must go below ``@tool``)."""
    if isinstance(function, BaseTool):
        raise TypeError(
            f"@wait was applied to the LangChain tool {function.name!r}; put it below @tool: "
            "@tool then @wait(...) then def ..."
        )
