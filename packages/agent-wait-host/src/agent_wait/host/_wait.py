"""The framework-neutral ``@wait`` decorator and ``publish_interrupts``, built over an adapter.

A framework package implements :class:`FrameworkAdapter` and exposes
``wait = make_wait(adapter)`` and ``publish_interrupts, apublish_interrupts =
make_publish_interrupts(adapter)``.

The value a ``@wait`` call parks on (the framework's interrupt value, or the metadata of a
deferred tool call) is::

    {"question": {"function": name, "args": {...}},
     "agent_wait": {"policy": {...}, "source": {"function": name}}}

so the policy travels with the question, and a bare interrupt value from code that never heard
of agent-wait (no ``agent_wait`` key) is still publishable with the default policy.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import logging
import secrets
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar, cast, get_type_hints, overload

from pydantic import TypeAdapter
from pydantic_core import PydanticSerializationError

from agent_wait.core._announce import PublishReport
from agent_wait.core._audit import AuditLog, audit_log_of, call_digest, configured_audit, record
from agent_wait.core._canonical import derive_question_id, to_jsonable
from agent_wait.core._config import configured_ledger, configured_rules
from agent_wait.core._errors import AnnounceFailed, InvalidAnswer, QuestionTooLarge
from agent_wait.core._ledger import Execution, ExecutionLedger
from agent_wait.core._models import PendingResult, Question, Source, trusted
from agent_wait.core._policy import UNSTATED, WaitPolicy
from agent_wait.core._publish import (
    ENVELOPE_LIMIT,
    Announce,
    Clock,
    apublish,
    build_envelope,
    not_sendable,
    publish,
)
from agent_wait.core._rules import Rejected, Rule, decide
from agent_wait.host._audit_trail import arun_recorded, run_recorded

logger = logging.getLogger(__name__)

PAYLOAD_KEY = "agent_wait"
Mode = Literal["interrupt", "async"]
F = TypeVar("F", bound=Callable[..., Any])
_NAMED = inspect.Parameter.POSITIONAL_OR_KEYWORD
_KEYWORD_ONLY = inspect.Parameter.KEYWORD_ONLY
# What the ask-time size check cannot see yet, so it leaves room for it: a thread id the
# framework cannot tell before the run parks (Pydantic AI without deps.thread_id), and the
# framework's own question id (it appears twice, as question_id and in reply_with).
_THREAD_ID_ROOM = 256
_QUESTION_ID_ROOM = 128
# Bytes for what only publish adds: a reply_to hint, the token and expires_at a signing host
# puts into reply_with (under 150 bytes), and adjust_envelope hook changes.
_PUBLISH_ROOM = 1024


@dataclass(frozen=True)
class WaitCall:
    """One call of a ``@wait`` function that is about to ask.

    Attributes:
        function: The undecorated function.
        name: The function name published as ``question.function``.
        bound: All arguments, defaults applied (including hidden and decision parameters).
        args: The published arguments, JSON-safe.
        policy: The policy.
        payload: The value to park on (see the module docstring).
        decision: The function's decision parameter, if it has one. Adapters whose framework
            saves an answer before the body runs pass it to :func:`apply_answer` to refuse an
            unusable answer first.
        check: Raises :class:`InvalidAnswer` for an answer this call cannot take (an in-doubt
            question takes only ``yes`` or ``no``); :func:`apply_answer` calls it first.
        doubts: For an in-doubt question (:func:`in_doubt_call`), the call whose approved run
            is in doubt: an adapter whose framework context rides in the call's arguments
            finds it there.
    """

    function: Callable[..., Any]
    name: str
    bound: inspect.BoundArguments
    args: dict[str, Any]
    policy: WaitPolicy
    payload: dict[str, Any]
    decision: str | None = None
    check: Callable[[Any], None] | None = None
    doubts: WaitCall | None = None


class FrameworkAdapter(Protocol):
    """What a framework package implements so the generic ``wait`` works on it."""

    name: str

    def park(self, call: WaitCall) -> Any:
        """Park the run on ``call.payload`` (the framework's interrupt) and return the answer.

        Either raises the framework's interrupt/deferral, or, when the run is resumed with an
        answer, returns that answer verbatim.
        """
        ...

    async def apark(self, call: WaitCall) -> Any:
        """Async :meth:`park`."""
        ...

    def thread_id(self, call: WaitCall) -> str:
        """The current run's thread id. Raise a clear error when there is none.

        Async mode needs it to derive the question id. Interrupt mode asks too, before the run
        parks, so the size check counts the real thread id; raising there only means the
        framework cannot tell it yet.
        """
        ...

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        """Parameters the framework injects (run context, config) that must not be published."""
        ...

    def questions_in(self, result: Any) -> list[Question]:
        """The questions a finished (parked) run's result is waiting on, in order."""
        ...

    # Optional (an adapter without it runs approved bodies without an execution record):
    # ``execution_key(call) -> str | None``, the framework's identity of the question ``call``
    # was just answered on, the same in every run of that question and different for every
    # other question; None where the framework cannot tell it.


def wait_payload(
    question: Any,
    policy: WaitPolicy,
    source: Source | None,
    answer_schema: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The value a ``@wait`` question parks on; ``answer_schema`` travels with it when given."""
    meta: dict[str, Any] = {
        "policy": policy.model_dump(mode="json"),
        "source": None if source is None else source.model_dump(),
    }
    if answer_schema is not None:
        meta["answer_schema"] = answer_schema
    return {"question": question, PAYLOAD_KEY: meta}


def wait_answer_schema(
    function: Callable[..., Any],
    parameters: Iterable[inspect.Parameter],
    allowed_actions: Sequence[str],
) -> dict[str, Any]:
    """The JSON Schema of an answer to a ``@wait`` call of ``function``.

    An object whose ``action`` is one of ``allowed_actions``; ``args`` (with approve: the
    arguments to change) limited to ``parameters`` (the published ones), each of its JSON type
    as pydantic reads the annotation; ``reason``, why. Other fields (a ``note``) are free.
    """
    try:
        hints = get_type_hints(function, include_extras=True)
    except Exception:  # noqa: BLE001 - an unresolvable annotation only loses the type check
        hints = {}
    args: dict[str, Any] = {}
    defs: dict[str, Any] = {}
    for parameter in parameters:
        annotation = hints.get(parameter.name, parameter.annotation)
        args[parameter.name] = _json_type(annotation, defs)
    schema: dict[str, Any] = {
        "type": "object",
        "description": f"An action of allowed_actions; with approve, args changes arguments of "
        f"{function.__name__}() (each keeps its JSON type); reason says why.",
        "properties": {
            "action": {"enum": list(allowed_actions)},
            "args": {"type": "object", "properties": args, "additionalProperties": False},
            "reason": {"type": "string"},
        },
        "required": ["action"],
    }
    if defs:
        schema["$defs"] = defs
    return schema


# The JSON Schema type of a published argument's value, by its Python type (bool before int).
_JSON_TYPES: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    ((int, float), "number"),
    (str, "string"),
    (list, "array"),
    (Mapping, "object"),
)


def edited_args_schema(args: Mapping[str, Any]) -> dict[str, Any]:
    """The JSON Schema of edited arguments of a call published with ``args``.

    For a question that states no parameter types (a foreign tool's call): only the names of
    ``args``, each keeping the JSON type of its published value (a number stays a number; a
    null was asked as anything).
    """
    properties: dict[str, Any] = {}
    for name, value in args.items():
        kind = next((k for t, k in _JSON_TYPES if isinstance(value, t)), None)
        properties[name] = {} if kind is None else {"type": kind}
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _json_type(annotation: Any, defs: dict[str, Any]) -> dict[str, Any]:
    """The JSON Schema of one parameter's values; ``{}`` (anything) when it cannot be told."""
    if annotation is inspect.Parameter.empty or annotation is Any or isinstance(annotation, str):
        return {}
    try:
        schema = TypeAdapter[Any](annotation).json_schema()
    except Exception:  # noqa: BLE001 - a type pydantic cannot describe is checked by the host
        return {}
    defs.update(schema.pop("$defs", {}))
    schema.pop("title", None)
    return schema


def question_from_value(question_id: str, value: Any) -> Question:
    """Read a parked value back into a :class:`Question`.

    A value written by :func:`wait_payload` gives its question, policy and source; any other
    value (a bare interrupt) is the question itself, with no source and no stated allowed
    actions (``[]``: the asking code never said which answers it takes).
    A payload whose policy no longer validates is published as a bare value rather than lost.
    """
    if isinstance(value, Mapping) and PAYLOAD_KEY in value and "question" in value:
        parked = cast("Mapping[str, Any]", value)
        meta: object = parked[PAYLOAD_KEY]
        if isinstance(meta, Mapping):
            fields = cast("Mapping[str, Any]", meta)
            try:
                policy = WaitPolicy.model_validate(fields.get("policy") or {})
                source_data = fields.get("source")
                source = None if source_data is None else Source.model_validate(source_data)
            except ValueError:
                logger.warning(
                    "question %s carries an invalid agent-wait policy; published as a bare value",
                    question_id,
                )
            else:
                schema = fields.get("answer_schema")
                return Question(
                    question_id=question_id,
                    question=parked["question"],
                    policy=policy,
                    source=source,
                    answer_schema=(
                        cast("dict[str, Any]", schema) if isinstance(schema, dict) else None
                    ),
                )
    return Question(question_id=question_id, question=value, policy=UNSTATED)


def apply_answer(
    call: WaitCall, answer: Any, decision: str | None
) -> tuple[bool, inspect.BoundArguments]:
    """Apply the answer rules (approve, approve with edited args, anything else) to a call.

    Returns:
        ``(run, bound)``: whether the body runs, and with which arguments. When ``run`` is
        False the answer is returned in the body's place.

    Raises:
        InvalidAnswer: ``answer["args"]`` is not an object or names unknown parameters.
    """
    if call.check is not None:
        call.check(answer)
    bound = call.bound
    if decision is not None and decision in bound.signature.parameters:
        bound.arguments[decision] = answer
        return True, bound
    if not (isinstance(answer, Mapping) and answer.get("action") == "approve"):  # pyright: ignore[reportUnknownMemberType]
        return False, bound
    edited = cast("Mapping[str, Any]", answer).get("args")
    if edited is None:
        return True, bound
    if not isinstance(edited, Mapping):
        raise InvalidAnswer(f"answer.args: expected an object of arguments, got {edited!r}")
    unknown = sorted(set(cast("Mapping[str, Any]", edited)) - set(call.args))
    if unknown:
        raise InvalidAnswer(
            f"answer.args: {unknown} are not arguments of {call.name!r} (published: {sorted(call.args)})"
        )
    for key, value in cast("Mapping[str, Any]", edited).items():
        bound.arguments[key] = value
    return True, bound


IN_DOUBT_FUNCTION = "did_it_happen"
"""``question.function`` of an in-doubt question (see :func:`in_doubt_call`)."""
IN_DOUBT_ACTIONS = ("yes", "no")
IN_DOUBT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"action": {"enum": list(IN_DOUBT_ACTIONS)}, "result": {}},
    "required": ["action"],
}
"""What an in-doubt question takes: yes (with the call's result, optionally) or no."""


def describe_call(name: str, args: Mapping[str, Any]) -> str:
    """``issue_refund(order_id='order-4471', amount=41000)``: a call as a person reads it."""
    return f"{name}({', '.join(f'{k}={v!r}' for k, v in args.items())})"


def _in_doubt_answer(answer: Any) -> None:
    action = (
        cast("Mapping[str, Any]", answer).get("action") if isinstance(answer, Mapping) else None
    )
    if action not in IN_DOUBT_ACTIONS:
        raise InvalidAnswer(
            "answer.action: an in-doubt question takes {'action': 'yes'} (it happened; its "
            "result may be given as answer.result) or {'action': 'no'} (it did not: it runs "
            f"once), got {answer!r}"
        )


def in_doubt_call(call: WaitCall, found: Execution) -> WaitCall:
    """The question asked when a run died inside ``call``'s approved body.

    Nothing runs until a person says whether the call had its effect: ``{"action": "yes"}``
    (optionally with ``"result"``) records it done and the run goes on with that result;
    ``{"action": "no"}`` runs the body once more. Each attempt asks its own question.
    """
    payload = in_doubt_payload(call.name, call.args, call.policy, found.attempt)
    parameters = [inspect.Parameter("answer", _NAMED, default=None)]
    bound = inspect.BoundArguments(inspect.Signature(parameters), {"answer": None})
    return WaitCall(
        call.function,
        call.name,
        bound,
        payload["question"]["args"],
        _in_doubt_policy(call.policy),
        payload,
        "answer",
        _in_doubt_answer,
        call,
    )


def in_doubt_payload(
    name: str, args: Mapping[str, Any], policy: WaitPolicy, attempt: int
) -> dict[str, Any]:
    """The parked payload of the in-doubt question about run ``attempt`` of ``name(**args)``.

    See :func:`in_doubt_call`: ``policy``'s timeout and tags, actions yes and no. For a host
    that keeps the record of an approved call that is not a ``@wait`` one.
    """
    said = describe_call(name, args)
    asked: dict[str, Any] = {"function": name, "args": dict(args), "attempt": attempt}
    question = {
        "function": IN_DOUBT_FUNCTION,
        "args": asked,
        "text": f"did `{said}` happen? A worker stopped while running it after it was approved",
    }
    return wait_payload(question, _in_doubt_policy(policy), Source(function=name), IN_DOUBT_SCHEMA)


def _in_doubt_policy(policy: WaitPolicy) -> WaitPolicy:
    return policy.model_copy(update={"allowed_actions": IN_DOUBT_ACTIONS, "default": None})


_UNRECORDABLE = object()


def _recordable(name: str, result: Any) -> Any:
    try:
        return to_jsonable(result, f"{name}()")
    except TypeError as error:
        logger.warning(
            "approved call %r: its result is not JSON (%s), so no record of the run is kept; a "
            "later run of the same call runs it again",
            name,
            error,
        )
        return _UNRECORDABLE


def _finished(ledger: ExecutionLedger, key: str, attempt: int, token: str, recorded: Any) -> None:
    if recorded is _UNRECORDABLE:
        ledger.release(key, attempt, token)
    else:
        ledger.finish(key, attempt, token, recorded)


def run_at_most_once(
    state: _Wait, call: WaitCall, body: Callable[[], Any], park: Callable[[WaitCall], Any]
) -> Any:
    """Run the approved ``body`` of ``call`` unless a record says it ran or may have run."""
    execution = state.execution(call)
    if execution is None:
        return body()
    key, ledger = execution
    attempt = 0
    while True:
        token = secrets.token_hex(16)
        found = ledger.claim(key, attempt, token)
        if found is None:
            try:
                result = body()
            except Exception:
                ledger.release(key, attempt, token)  # it raised: a retry may run it
                raise
            _finished(ledger, key, attempt, token, _recordable(call.name, result))
            return result
        if found.done:
            return found.result
        reply = cast("Mapping[str, Any]", park(in_doubt_call(call, found)))
        if reply["action"] == "yes":
            return ledger.finish(key, attempt, found.token, reply.get("result")).result
        attempt += 1


async def arun_at_most_once(
    state: _Wait,
    call: WaitCall,
    body: Callable[[], Awaitable[Any]],
    park: Callable[[WaitCall], Awaitable[Any]],
) -> Any:
    """Async :func:`run_at_most_once`: the ledger's IO runs in a worker thread."""
    execution = state.execution(call)
    if execution is None:
        return await body()
    key, ledger = execution

    async def in_doubt(found: Execution) -> Mapping[str, Any]:
        return cast("Mapping[str, Any]", await park(in_doubt_call(call, found)))

    return await arun_approved_once(ledger, key, call.name, body, in_doubt)


async def arun_approved_once(
    ledger: ExecutionLedger,
    key: str,
    name: str,
    body: Callable[[], Awaitable[Any]],
    in_doubt: Callable[[Execution], Awaitable[Mapping[str, Any]]],
) -> Any:
    """Run an approved call's ``body`` at most once across crashes, as ``@wait(once=True)`` does.

    For a host that keeps approved calls of its own framework (not ``@wait`` ones) to one run:
    before ``body`` runs, attempt 0 of ``key`` is claimed in ``ledger`` under a fresh fencing
    token, and marked done with the result as JSON after it (a result that is not JSON is
    logged and, like an exception, releases the claim: a later run runs ``body`` again). The
    ledger's IO runs in a worker thread.

    A claim found done returns its recorded result without running ``body``. One found still
    executing means a run died inside ``body``: ``in_doubt(found)`` returns the answer to the
    in-doubt question of ``found.attempt`` (asked with :func:`in_doubt_payload`), or raises
    whatever parks the call on that question when none was given. ``{"action": "yes"}``
    records the attempt done with the answer's ``"result"`` and returns it; ``{"action": "no"}``
    claims the next attempt and runs ``body`` once more.

    Args:
        ledger: Where the records live (e.g. :func:`~agent_wait.core.configured_ledger`).
        key: The call's identity, the same in every redelivery of its approval.
        name: The tool's name, for the log.
        body: Runs the call.
        in_doubt: The in-doubt answer of an attempt, or raises to park on its question.
    """
    attempt = 0
    while True:
        token = secrets.token_hex(16)
        found = await asyncio.to_thread(ledger.claim, key, attempt, token)
        if found is None:
            try:
                result = await body()
            except Exception:
                await asyncio.to_thread(ledger.release, key, attempt, token)  # a retry may run it
                raise
            recorded = _recordable(name, result)
            await asyncio.to_thread(_finished, ledger, key, attempt, token, recorded)
            return result
        if found.done:
            return found.result
        reply = await in_doubt(found)
        if reply.get("action") == "yes":
            record = await asyncio.to_thread(
                ledger.finish, key, attempt, found.token, reply.get("result")
            )
            return record.result
        attempt += 1


class _Wait:
    """Shared machinery of one decorated function."""

    def __init__(
        self,
        adapter: FrameworkAdapter,
        function: Callable[..., Any],
        policy: WaitPolicy,
        mode: Mode,
        announce: Announce,
        decision: str,
        when: Callable[..., Any] | None,
        clock: Clock | None,
        once: bool = True,
        ledger: ExecutionLedger | None = None,
    ) -> None:
        if mode not in ("interrupt", "async"):
            raise ValueError(f"mode: expected 'interrupt' or 'async', got {mode!r}")
        if mode == "async" and announce is None:
            raise ValueError(
                f"announce: @wait(mode='async') on {function.__name__!r} publishes by itself and "
                "needs announcers; pass announce=..."
            )
        self.adapter = adapter
        self.function = function
        self.name = function.__name__
        self.policy = policy
        self.mode = mode
        self.announce = announce
        self.when = when
        self.clock = clock
        if not isinstance(once, bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"once: expected True or False, got {once!r}")
        if ledger is not None and not isinstance(ledger, ExecutionLedger):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise TypeError(f"ledger: expected an ExecutionLedger or None, got {ledger!r}")
        self.once = once
        self.ledger = ledger
        signature = inspect.signature(function)
        self.decision = decision if decision in signature.parameters else None
        if self.decision is not None:
            # Frameworks never pass the decision parameter (it is hidden from them), so a call
            # without an answer binds it to None instead of failing for a missing argument.
            params = [
                p.replace(default=None) if p.name == self.decision and p.default is p.empty else p
                for p in signature.parameters.values()
            ]
            signature = signature.replace(parameters=params)
        self.signature = signature
        hidden = set(adapter.hidden_parameters(self.signature))
        if self.decision:
            hidden.add(self.decision)
        self.hidden = frozenset(hidden)
        # Most tool signatures have only named parameters; for those, binding and calling are
        # done here at a fraction of Signature.bind + apply_defaults + BoundArguments.args, so a
        # @wait(when=...) call that does not ask costs little more than the function.
        params = signature.parameters.values()
        self._simple = all(p.kind in (_NAMED, _KEYWORD_ONLY) for p in params)
        self._names = tuple(signature.parameters)
        self._known = frozenset(self._names)
        self._positional = tuple(p.name for p in params if p.kind is _NAMED)
        self._keyword_only = tuple(p.name for p in params if p.kind is _KEYWORD_ONLY)
        self._defaults = {p.name: p.default for p in params if p.default is not p.empty}
        self._answer_schema: dict[str, Any] | None = None

    @property
    def answer_schema(self) -> dict[str, Any]:
        """The answer schema of every question this function asks, built when first asked."""
        if self._answer_schema is None:
            published = [p for p in self.signature.parameters.values() if p.name not in self.hidden]
            self._answer_schema = wait_answer_schema(
                self.function, published, self.policy.allowed_actions
            )
        return self._answer_schema

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """All arguments by name in signature order, defaults applied.

        The same as ``Signature.bind`` + ``apply_defaults``, which also raises the TypeError of a
        call that does not fit the signature.
        """
        if self._simple:
            arguments = self._bind_named(args, kwargs)
            if arguments is not None:
                return arguments
        bound = self.signature.bind(*args, **kwargs)
        bound.apply_defaults()
        return bound.arguments

    def _bind_named(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any] | None:
        # None for any call that does not simply fit: Signature.bind then raises its own error.
        if len(args) > len(self._positional):
            return None
        arguments = dict(zip(self._names, args, strict=False))  # args may stop short
        for key in kwargs:
            if key in arguments or key not in self._known:
                return None
        if kwargs:
            arguments.update(kwargs)
        elif len(arguments) == len(self._names):
            return arguments
        defaults = self._defaults
        try:
            return {n: arguments[n] if n in arguments else defaults[n] for n in self._names}
        except KeyError:  # a required argument is missing
            return None

    def run(self, arguments: dict[str, Any]) -> Any:
        """Call the function with bound arguments (as ``BoundArguments.args`` and ``.kwargs``)."""
        if self._simple:
            return self.function(
                *[arguments[n] for n in self._positional],
                **{n: arguments[n] for n in self._keyword_only},
            )
        bound = inspect.BoundArguments(self.signature, arguments)
        return self.function(*bound.args, **bound.kwargs)

    def prepare(
        self, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> WaitCall | dict[str, Any] | Rejected:
        """Bind the call; the arguments if it runs without asking, a rule's rejection, or the WaitCall."""
        arguments = self.bind(args, kwargs)
        published = (
            {k: v for k, v in arguments.items() if k not in self.hidden}
            if self.hidden
            else arguments
        )
        if self.when is not None and not self._asks(published):
            return arguments
        bound = inspect.BoundArguments(self.signature, arguments)
        json_args = to_jsonable(published, f"{self.name}()")
        question = {"function": self.name, "args": json_args}
        schema = self.answer_schema
        payload = wait_payload(question, self.policy, Source(function=self.name), schema)
        call = WaitCall(
            self.function, self.name, bound, json_args, self.policy, payload, self.decision
        )
        rule = decide(configured_rules(), self.name, json_args, self.policy.tags)
        if rule is not None and rule.decision != "ask":
            self._record_rule(call, rule)
            if rule.decision == "approve":
                return arguments  # runs now; nothing is published
            return Rejected({"action": "reject", "reason": f"rule {rule.name}"})
        self._check_size(call)
        return call

    def _record_rule(self, call: WaitCall, rule: Rule) -> None:
        """The rule's decision in the audit trail, under the question it would have asked."""
        thread_id = self._thread_id_now(call) or "unknown"
        question_id = derive_question_id(thread_id, self.name, call.args)
        facts = {
            "rule": rule.name,
            "decision": rule.decision,
            "function": self.name,
            "call_digest": call_digest(self.name, call.args),
        }
        record(self.audit_log(), thread_id, question_id, "ruled", facts)

    def _asks(self, published: dict[str, Any]) -> bool:
        assert self.when is not None
        try:
            return bool(self.when(**published))
        except Exception:
            logger.exception("@wait(when=...) predicate of %r raised; asking anyway", self.name)
            return True

    def _check_size(self, call: WaitCall) -> None:
        """Refuse, before the run parks, a question whose envelope no announcer would take.

        Too large, or text without a UTF-8 form (a lone surrogate): the serialiser finds it.

        The envelope is built as publish will build it, with the run's thread id when the
        framework can tell it now, so a question refused at publish time (after parking, and
        again on every redelivery) is refused here instead.
        """
        thread_id = self._thread_id_now(call)
        question = trusted(
            Question,
            {
                "question_id": "q" * _QUESTION_ID_ROOM,
                "question": call.payload["question"],
                "policy": self.policy,
                "asked_at": None,
                "source": Source(function=self.name),
                "answer_schema": call.payload[PAYLOAD_KEY].get("answer_schema"),
                "context": None,
            },
        )
        envelope = build_envelope(question, thread_id or "t" * _THREAD_ID_ROOM)
        try:
            size = len(envelope.to_json()) + _PUBLISH_ROOM
        except PydanticSerializationError as error:
            raise not_sendable(envelope, error) from None
        if size > ENVELOPE_LIMIT:
            raise QuestionTooLarge(
                size,
                ENVELOPE_LIMIT,
                self.name,
                thread_id_length=None if thread_id is None else len(thread_id),
            )

    def _thread_id_now(self, call: WaitCall) -> str | None:
        # Async mode always has one (pending() needs it); in interrupt mode some frameworks can
        # tell it before the run parks (LangGraph's config, Strands' session id) and some not.
        try:
            return self.adapter.thread_id(call)
        except Exception:  # noqa: BLE001 - no thread id yet: the check leaves room for one
            return None

    def audit_log(self) -> AuditLog | None:
        """Where an approved run is recorded: beside this function's ledger, else the configured."""
        return audit_log_of(self.ledger) if self.ledger is not None else configured_audit()

    def execution(self, call: WaitCall) -> tuple[str, ExecutionLedger] | None:
        """The key and ledger that keep ``call``'s approved body to one run, or None."""
        if not self.once:
            return None
        key_of = getattr(self.adapter, "execution_key", None)
        key = key_of(call) if callable(key_of) else None
        if key is None:
            return None
        return str(key), self.ledger if self.ledger is not None else configured_ledger()

    def pending(self, call: WaitCall) -> tuple[Question, str]:
        thread_id = self.adapter.thread_id(call)
        question_id = derive_question_id(thread_id, self.name, call.args)
        question = Question(
            question_id=question_id,
            question=call.payload["question"],
            policy=self.policy,
            source=Source(function=self.name),
            answer_schema=self.answer_schema,
        )
        return question, thread_id

    def pending_result(self, question: Question, report: PublishReport) -> dict[str, Any]:
        if not report.ok:
            # The call returns normally (the run must go on); the failure is in the log and hooks.
            logger.error(
                "@wait(mode='async') %r: question %s was not delivered: %s",
                self.name,
                question.question_id,
                AnnounceFailed(report),
            )
        return PendingResult(question_id=question.question_id, function=self.name).model_dump()


def _strip_decision(wrapper: Callable[..., Any], state: _Wait) -> None:
    # Frameworks build tool schemas from the signature: the decision parameter is ours, not the model's.
    if state.decision is None:
        return
    params = [p for p in state.signature.parameters.values() if p.name != state.decision]
    wrapper.__signature__ = state.signature.replace(parameters=params)  # type: ignore[attr-defined]
    annotations = dict(getattr(state.function, "__annotations__", {}))
    annotations.pop(state.decision, None)
    wrapper.__annotations__ = annotations


def _decorate(state: _Wait) -> Callable[..., Any]:
    function = state.function
    if inspect.iscoroutinefunction(function):

        @functools.wraps(function)
        async def async_wrapper(*args: Any, **kwargs: Any) -> Any:
            prepared = state.prepare(args, kwargs)
            if isinstance(prepared, Rejected):
                return prepared.answer
            if not isinstance(prepared, WaitCall):
                return await state.run(prepared)
            if state.mode == "async":
                question, thread_id = state.pending(prepared)
                report = await apublish([question], thread_id, state.announce, clock=state.clock)
                return state.pending_result(question, report)
            answer = await state.adapter.apark(prepared)
            run, bound = apply_answer(prepared, answer, state.decision)
            if not run:
                return answer
            ran_with = {k: bound.arguments[k] for k in prepared.args}
            return await arun_at_most_once(
                state,
                prepared,
                lambda: arun_recorded(
                    state.audit_log,
                    state.name,
                    ran_with,
                    answer,
                    lambda: function(*bound.args, **bound.kwargs),
                ),
                state.adapter.apark,
            )

        wrapper: Callable[..., Any] = async_wrapper
    else:

        @functools.wraps(function)
        def sync_wrapper(*args: Any, **kwargs: Any) -> Any:
            prepared = state.prepare(args, kwargs)
            if isinstance(prepared, Rejected):
                return prepared.answer
            if not isinstance(prepared, WaitCall):
                return state.run(prepared)
            if state.mode == "async":
                question, thread_id = state.pending(prepared)
                report = publish([question], thread_id, state.announce, clock=state.clock)
                return state.pending_result(question, report)
            answer = state.adapter.park(prepared)
            run, bound = apply_answer(prepared, answer, state.decision)
            if not run:
                return answer
            ran_with = {k: bound.arguments[k] for k in prepared.args}
            return run_at_most_once(
                state,
                prepared,
                lambda: run_recorded(
                    state.audit_log,
                    state.name,
                    ran_with,
                    answer,
                    lambda: function(*bound.args, **bound.kwargs),
                ),
                state.adapter.park,
            )

        wrapper = sync_wrapper
    _strip_decision(wrapper, state)
    wrapper.__agent_wait__ = state  # type: ignore[attr-defined]
    return wrapper


class WaitDecorator(Protocol):
    """The ``wait`` a framework package exports."""

    @overload
    def __call__(self, policy: F, /) -> F: ...
    @overload
    def __call__(
        self,
        policy: WaitPolicy | Mapping[str, Any] | None = None,
        /,
        *,
        mode: Mode = "interrupt",
        announce: Announce = None,
        decision: str = "decision",
        when: Callable[..., Any] | None = None,
        clock: Clock | None = None,
        once: bool = True,
        ledger: ExecutionLedger | None = None,
    ) -> Callable[[F], F]: ...
    def __call__(self, policy: Any = None, /, **options: Any) -> Any: ...


def make_wait(
    adapter: FrameworkAdapter,
    *,
    check: Callable[[Any, str], object] | None = None,
    doc: str | None = None,
) -> WaitDecorator:
    """Build the ``wait`` decorator of a framework.

    Args:
        adapter: The framework's adapter.
        check: Called as ``check(target, decision)`` with everything about to be decorated
            (and with anything passed bare that is not a policy), so a framework can refuse
            its own mistakes (``@wait`` above its ``@tool``) when the module loads, not when the
            model first calls the tool.
        doc: The framework's docstring for the returned ``wait``.

    The returned ``wait(policy=None, *, mode="interrupt", announce=None, decision="decision",
    when=None)`` works bare (``@wait``) or called (``@wait(WaitPolicy(timeout="P3D"))``), on
    sync and async functions:

    - ``mode="interrupt"``: the call parks on the framework's interrupt; the host publishes it
      after the run with ``publish_interrupts``. On resume the answer rules apply:
      ``{"action": "approve"}`` runs the body, ``{"action": "approve", "args": {...}}`` runs it
      with those arguments changed, anything else is returned in its place. A function with a
      ``decision`` parameter always runs and receives the whole answer there.
    - ``mode="async"``: the call publishes its question itself (``announce`` is required) under
      the derived id ``sha256(thread_id | function | canonical args)`` and returns
      ``{"status": "pending_approval", "question_id", "function"}`` without running the body.
    - ``when``: a predicate called with the published arguments as keywords; False runs the body
      without asking. It must be deterministic (it runs again on resume); if it raises, the call
      asks anyway.
    - ``once`` (default True): an approved body runs at most once, across crashes, on a
      framework whose adapter tells the answered question (``execution_key``): it is recorded
      ``executing`` in the ``ledger`` (None: :func:`~agent_wait.core.configured_ledger`) before
      it runs and ``done`` with its JSON result after; a run that finds ``done`` returns the
      recorded result, one that finds ``executing`` runs nothing and asks a person whether the
      call happened (:func:`in_doubt_call`). ``once=False``: no record, the framework's own
      semantics (a run killed inside the body runs it again).
    """

    def wait(policy: Any = None, /, **options: Any) -> Any:
        settings = _defaults(options)
        if policy is not None and not isinstance(policy, WaitPolicy | Mapping):
            # Bare @wait: the target itself came as the first argument.
            if check is not None:
                check(policy, settings["decision"])
            if callable(policy):
                return _decorate(_Wait(adapter, policy, WaitPolicy.coerce(None), **settings))
        resolved = WaitPolicy.coerce(cast("WaitPolicy | Mapping[str, Any] | None", policy))

        def decorator(function: F) -> F:
            if check is not None:
                check(function, settings["decision"])
            return cast("F", _decorate(_Wait(adapter, function, resolved, **settings)))

        return decorator

    if doc is not None:
        wait.__doc__ = doc
    return cast("WaitDecorator", wait)


def _defaults(options: Mapping[str, Any]) -> dict[str, Any]:
    allowed = {"mode", "announce", "decision", "when", "clock", "once", "ledger"}
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise TypeError(f"wait() got unknown options {unknown}; accepted: {sorted(allowed)}")
    return {
        "mode": options.get("mode", "interrupt"),
        "announce": options.get("announce"),
        "decision": options.get("decision", "decision"),
        "when": options.get("when"),
        "clock": options.get("clock"),
        "once": options.get("once", True),
        "ledger": options.get("ledger"),
    }


PublishInterrupts = Callable[..., PublishReport]
APublishInterrupts = Callable[..., Awaitable[PublishReport]]


def make_publish_interrupts(
    adapter: FrameworkAdapter,
) -> tuple[PublishInterrupts, APublishInterrupts]:
    """Build ``publish_interrupts`` and ``apublish_interrupts`` of a framework.

    Both take ``(result, thread_id, announce=None, *, reply_to=None, strict=False, clock=None)``,
    read the questions the run parked on out of ``result``, publish one envelope per question
    and return the :class:`PublishReport`.
    """

    def publish_interrupts(
        result: Any,
        thread_id: str,
        announce: Announce = None,
        *,
        reply_to: Mapping[str, Any] | None = None,
        strict: bool = False,
        clock: Clock | None = None,
    ) -> PublishReport:
        return publish(
            adapter.questions_in(result),
            thread_id,
            announce,
            reply_to=reply_to,
            strict=strict,
            clock=clock,
        )

    async def apublish_interrupts(
        result: Any,
        thread_id: str,
        announce: Announce = None,
        *,
        reply_to: Mapping[str, Any] | None = None,
        strict: bool = False,
        clock: Clock | None = None,
    ) -> PublishReport:
        return await apublish(
            adapter.questions_in(result),
            thread_id,
            announce,
            reply_to=reply_to,
            strict=strict,
            clock=clock,
        )

    return publish_interrupts, apublish_interrupts
