"""An MCP server's request for input, during a tool call, as an agent-wait question.

Two protocol versions carry it. From 2026-07-28 a ``tools/call`` may return an
``InputRequiredResult`` (``inputRequests`` plus an opaque ``requestState``) and the client retries
the call with ``inputResponses``; before it, the server sends its own ``elicitation/create``
request while the call is open and waits for its response. Either way the elicitation becomes a
question whose answer is the MCP ``ElicitResult`` (``{"action": "accept", "content": {...}}``,
``{"action": "decline"}`` or ``{"action": "cancel"}``), and the run parks on it with the
framework's own interrupt, as ``@wait`` does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream

import mcp.types as types
from agent_wait.core import WaitPolicy, example_answer
from agent_wait.host.adapter import PAYLOAD_KEY, wait_payload
from agent_wait.mcp._errors import InputRequestRefused, InputRoundsExceeded
from mcp.client import Client
from mcp.client.session import ClientRequestContext

ELICIT_ACTIONS = ("accept", "decline", "cancel")
"""The actions of an elicitation's answer, in the order MCP names them."""

REQUEST_STATE_LIMIT = 16 * 1024
"""The most bytes of ``requestState`` a question keeps; a server that sends more is refused."""

MCP_KEY = "mcp"
"""The key, next to the policy in a parked value's ``agent_wait`` entry, of the call to retry.

It holds the tool, its arguments, the input request's key and the ``requestState``: what
:func:`retry_with_answer` needs, kept out of the question so no announcer shows it.
"""


def answer_schema(params: types.ElicitRequestParams) -> dict[str, Any]:
    """The JSON Schema of an answer to ``params``: an ``ElicitResult``.

    A form's ``accept`` carries ``content`` matching its ``requestedSchema``; a URL's ``accept``
    carries nothing (the person did what the link asked); ``decline`` and ``cancel`` carry
    nothing. The action decides which applies (``if``/``then``/``else``), so a refusal names the
    field that is wrong rather than the other actions; ``examples`` holds one valid accept.
    """
    accept: dict[str, Any] = {"properties": {"action": {"const": "accept"}}}
    example: dict[str, Any] = {"action": "accept"}
    if isinstance(params, types.ElicitRequestFormParams):
        accept = {
            "properties": {"action": {"const": "accept"}, "content": params.requested_schema},
            "required": ["action", "content"],
            "additionalProperties": False,
        }
        example["content"] = example_answer(params.requested_schema)
    else:
        accept["additionalProperties"] = False
    return {
        "type": "object",
        "properties": {"action": {"enum": list(ELICIT_ACTIONS)}},
        "required": ["action"],
        "if": {"properties": {"action": {"const": "accept"}}},
        "then": accept,
        "else": {"properties": {"action": True}, "additionalProperties": False},
        "examples": [example],
    }


def elicitation_question(
    params: types.ElicitRequestParams, *, server: str, tool: str
) -> dict[str, Any]:
    """What a person is asked: ``{"text", "server", "tool"}``, and ``url`` in URL mode.

    ``text`` is the elicitation's message; ``server`` and ``tool`` say which call asks. A URL
    elicitation is passed on as its link, for the person to open; its answer only says whether
    they did.
    """
    question: dict[str, Any] = {"text": params.message, "server": server, "tool": tool}
    if isinstance(params, types.ElicitRequestURLParams):
        question["url"] = params.url
    return question


def elicitation_value(
    params: types.ElicitRequestParams,
    *,
    server: str,
    tool: str,
    arguments: Mapping[str, Any] | None = None,
    key: str | None = None,
    request_state: str | None = None,
    policy: WaitPolicy | None = None,
) -> dict[str, Any]:
    """The value a run parks on for one elicitation: what ``@wait`` parks on, plus the call.

    The question is :func:`elicitation_question`, the answer schema :func:`answer_schema`, the
    allowed actions ``accept``, ``decline`` and ``cancel`` unless ``policy`` says otherwise.
    The tool, its arguments, the input request's ``key`` and ``request_state`` go under
    :data:`MCP_KEY` beside the policy, which no announcer shows.

    Raises:
        InputRequestRefused: ``request_state`` is longer than :data:`REQUEST_STATE_LIMIT` bytes.
    """
    if request_state is not None:
        size = len(request_state.encode())
        if size > REQUEST_STATE_LIMIT:
            raise InputRequestRefused(
                f"requestState: {size} bytes from server {server!r} (tool {tool!r}), more than "
                f"the {REQUEST_STATE_LIMIT} a question keeps"
            )
    value = wait_payload(
        elicitation_question(params, server=server, tool=tool),
        policy or WaitPolicy(allowed_actions=ELICIT_ACTIONS),
        None,
        answer_schema(params),
    )
    value[PAYLOAD_KEY][MCP_KEY] = {
        "tool": tool,
        "arguments": dict(arguments) if arguments is not None else None,
        "key": key,
        "request_state": request_state,
    }
    return value


def elicit_result(answer: Any) -> types.ElicitResult:
    """The MCP ``ElicitResult`` an answer gives.

    Raises:
        InputRequestRefused: The answer is not ``{"action": "accept" | "decline" | "cancel"}``
            (with ``content`` only on ``accept``).
    """
    if not isinstance(answer, Mapping):
        raise InputRequestRefused(
            f"answer: expected an elicitation result object, got {type(answer).__name__}"
        )
    found = cast("Mapping[str, Any]", answer)
    action = found.get("action")
    if action not in ELICIT_ACTIONS:
        raise InputRequestRefused(
            f"answer.action: {str(action)[:80]!r} is not one of {list(ELICIT_ACTIONS)}"
        )
    content = found.get("content")
    if content is not None and action != "accept":
        raise InputRequestRefused(f"answer.content: only an accept carries content, not {action}")
    return types.ElicitResult.model_validate({"action": action, "content": content})


async def retry_with_answer(
    client: Client, value: Mapping[str, Any], answer: Any
) -> types.CallToolResult | types.InputRequiredResult:
    """Retry the call a parked :func:`elicitation_value` came from, with its answer.

    For a host that keeps the parked value instead of running the asking code again: the call
    is retried with the stored ``requestState`` and the answer as the response to the stored
    input request. A server refuses a state older than its time limit, or one sealed by an
    earlier process of it (a process-local key, as the SDK's default over stdio);
    :class:`ElicitationBridge` asks again instead.

    Returns:
        The tool's result, or the next ``InputRequiredResult`` when it asks for more.

    Raises:
        InputRequestRefused: ``value`` is not a parked multi round-trip elicitation, or the
            answer is not an elicitation result.
    """
    meta: object = value.get(PAYLOAD_KEY)
    call: object = (
        cast("Mapping[str, Any]", meta).get(MCP_KEY) if isinstance(meta, Mapping) else None
    )
    if not isinstance(call, Mapping) or not isinstance(
        cast("Mapping[str, Any]", call).get("key"), str
    ):
        raise InputRequestRefused(
            f"value: not a parked multi round-trip elicitation (no {PAYLOAD_KEY}.{MCP_KEY}.key)"
        )
    stored = cast("Mapping[str, Any]", call)
    responses: types.InputResponses = {stored["key"]: elicit_result(answer)}
    return await client.session.call_tool(
        stored["tool"],
        stored["arguments"],
        input_responses=responses,
        request_state=stored["request_state"],
        allow_input_required=True,
    )


@dataclass
class _Elicited:
    """A server-initiated ``elicitation/create`` waiting, in the session's task, for its result."""

    params: types.ElicitRequestParams
    done: anyio.Event = field(default_factory=anyio.Event)
    result: types.ElicitResult = field(default_factory=lambda: types.ElicitResult(action="cancel"))


@dataclass
class _Parked:
    """What ``park`` raised: the run parks once the client is closed."""

    raised: BaseException


@dataclass
class _Finished:
    """One ``tools/call`` round's result, or what it raised."""

    result: types.CallToolResult | types.InputRequiredResult | None = None
    error: Exception | None = None


class ElicitationBridge:
    """Tool calls to an MCP server whose elicitations are agent-wait questions.

    :meth:`call_tool` connects an SDK ``Client`` with the bridge's
    :meth:`elicitation_callback` (it declares the elicitation capability and answers the
    pre-2026-07-28 ``elicitation/create`` requests) and makes the call. Every elicitation of the call is handed to ``park``, the
    framework's interrupt (``langgraph.types.interrupt``; ``park`` of ``agent_wait.pydantic_ai``
    or ``agent_wait.strands`` given the tool's context), as :func:`elicitation_value`: the
    first time, ``park`` raises and the run parks on the question; when the run resumes with
    the answer, the asking code runs again, the server asks again, and ``park`` returns the
    answer, which goes back to the server as the ``ElicitResult``.

    Under 2026-07-28 the call is retried with ``inputResponses`` and the latest round's
    ``requestState`` (the first round of a multi round-trip call changes nothing on the
    server, so asking it again is safe). Under the older protocol the call that asked is
    cancelled when the run parks, its elicitation answered ``cancel``; the tool runs again on
    resume and receives the answer.

    Args:
        park: The framework's interrupt: takes the parked value, returns the answer or raises.
        server: The server's name, shown with every question.
        policy: The questions' policy; by default ``accept``, ``decline`` and ``cancel``.
        max_rounds: The most input requests one call may make.
    """

    def __init__(
        self,
        park: Callable[[dict[str, Any]], Any],
        *,
        server: str,
        policy: WaitPolicy | None = None,
        max_rounds: int = 10,
    ) -> None:
        self._park = park
        self._server = server
        self._policy = policy
        self._max_rounds = max_rounds
        self._asks: MemoryObjectSendStream[_Elicited | _Finished] | None = None

    async def elicitation_callback(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        """The SDK ``Client``'s ``elicitation_callback``: hand the request to the open call."""
        asks = self._asks
        if asks is None:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message="elicitation outside a tool call made through ElicitationBridge.call_tool",
            )
        elicited = _Elicited(params)
        await asks.send(elicited)
        await elicited.done.wait()
        return elicited.result

    async def call_tool(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        """Connect ``client``, call tool ``name``, park on each elicitation it makes.

        ``client`` is an SDK ``Client`` not yet connected, without an ``elicitation_callback``
        of its own: the bridge sets its own, connects for this call and disconnects after. When
        the run parks, what ``park`` raised is raised after the client is closed, so it reaches
        the framework as itself rather than inside the SDK's exception group.

        Raises:
            InputRequestRefused: The server asked for input other than an elicitation, or sent
                a ``requestState`` longer than :data:`REQUEST_STATE_LIMIT` bytes.
            InputRoundsExceeded: The call asked for input more than ``max_rounds`` times.
            Exception: Whatever ``park`` raises to park the run, and the SDK's errors.
        """
        if client.elicitation_callback not in (None, self.elicitation_callback):
            raise ValueError(
                "client.elicitation_callback: already set; ElicitationBridge.call_tool answers "
                "elicitations itself"
            )
        if self._asks is not None:
            raise RuntimeError("ElicitationBridge.call_tool: one call at a time per bridge")
        client.elicitation_callback = self.elicitation_callback
        async with client:
            outcome = await self._call(client, name, arguments, meta)
        if isinstance(outcome, _Parked):
            raise outcome.raised
        return outcome

    async def _call(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any] | None,
        meta: types.RequestParamsMeta | None,
    ) -> types.CallToolResult | _Parked:
        responses: types.InputResponses | None = None
        state: str | None = None
        asked = 0
        while True:
            result = await self._round(client, name, arguments, meta, responses, state)
            if not isinstance(result, types.InputRequiredResult):
                return result
            requests = result.input_requests or {}
            asked += max(len(requests), 1)
            state = result.request_state
            answered: types.InputResponses = {}
            try:
                if asked > self._max_rounds:
                    raise InputRoundsExceeded(
                        f"tool {name!r} on server {self._server!r} asked for input more than "
                        f"{self._max_rounds} times"
                    )
                for key, request in requests.items():
                    answered[key] = self._ask(request, name, arguments, key, state)
            except BaseException as raised:  # noqa: BLE001 - the run parks: raised once the client closes
                return _Parked(raised)
            responses = answered or None

    def _ask(
        self,
        request: types.InputRequest,
        tool: str,
        arguments: Mapping[str, Any] | None,
        key: str | None,
        state: str | None,
    ) -> types.ElicitResult:
        if not isinstance(request, types.ElicitRequest):
            raise InputRequestRefused(
                f"inputRequests.{key}: {request.method} from server {self._server!r} (tool "
                f"{tool!r}) cannot be asked of a person; only elicitation/create can"
            )
        value = elicitation_value(
            request.params,
            server=self._server,
            tool=tool,
            arguments=arguments,
            key=key,
            request_state=state,
            policy=self._policy,
        )
        return elicit_result(self._park(value))

    async def _round(
        self,
        client: Client,
        name: str,
        arguments: dict[str, Any] | None,
        meta: types.RequestParamsMeta | None,
        responses: types.InputResponses | None,
        state: str | None,
    ) -> types.CallToolResult | types.InputRequiredResult | _Parked:
        # One tools/call; an elicitation/create arriving meanwhile is parked on here, in the
        # caller's task (where the framework's interrupt finds its run), not in the session's.
        send, receive = anyio.create_memory_object_stream[_Elicited | _Finished](math.inf)
        self._asks = send
        parking: BaseException | None = None
        finished = _Finished()
        asked = 0

        async def call() -> None:
            try:
                result = await client.session.call_tool(
                    name,
                    arguments,
                    input_responses=responses,
                    request_state=state,
                    meta=meta,
                    allow_input_required=True,
                )
            except Exception as error:  # noqa: BLE001 - re-raised by the caller, not in an ExceptionGroup
                await send.send(_Finished(error=error))
            else:
                await send.send(_Finished(result=cast("Any", result)))

        try:
            async with anyio.create_task_group() as group:
                group.start_soon(call)
                async for item in receive:
                    if isinstance(item, _Finished):
                        finished = item
                        break
                    asked += 1
                    try:
                        if asked > self._max_rounds:
                            raise InputRoundsExceeded(
                                f"tool {name!r} on server {self._server!r} asked for input "
                                f"more than {self._max_rounds} times"
                            )
                        item.result = self._ask(
                            types.ElicitRequest(params=item.params), name, arguments, None, None
                        )
                    except BaseException as raised:  # noqa: BLE001 - the run parks: the call stops
                        parking = raised
                        item.done.set()
                        group.cancel_scope.cancel()
                        break
                    item.done.set()
        finally:
            self._asks = None
            send.close()
            receive.close()
        if parking is not None:
            return _Parked(parking)
        if finished.error is not None:
            raise finished.error
        assert finished.result is not None
        return finished.result
