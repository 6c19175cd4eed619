"""The elicitation bridge in one process, against the booking server in its own (stdio)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import mcp.types as types
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from agent_wait.core import WaitPolicy, schema_problem
from agent_wait.host.adapter import question_from_value
from agent_wait.mcp import (
    MCP_KEY,
    REQUEST_STATE_LIMIT,
    ElicitationBridge,
    InputRequestRefused,
    InputRoundsExceeded,
    answer_schema,
    elicit_result,
    elicitation_value,
    retry_with_answer,
)

ROOT = Path(__file__).resolve().parents[2]
GUEST = {"name": "Ada", "nights": 3}


def booking(log: Path, mode: str) -> Client:
    server = StdioServerParameters(
        command=sys.executable, args=["-m", "tests.mcp.booking_server", str(log)], cwd=str(ROOT)
    )
    return Client(server, mode=mode)


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_each_elicitation_is_parked_on_and_its_answer_reaches_the_tool(
    mode: str, tmp_path: Path
) -> None:
    parked: list[dict[str, Any]] = []

    def park(value: dict[str, Any]) -> Any:
        parked.append(value)
        return {"action": "accept", "content": GUEST}

    bridge = ElicitationBridge(park, server="booking")
    result = await bridge.call_tool(booking(tmp_path / "log", mode), "book_room", {"city": "Rome"})

    assert result.content[0].type == "text"
    assert result.content[0].text == "booked 3 nights in Rome for Ada"
    (value,) = parked
    question = question_from_value("q-1", value)
    assert question.question == {
        "text": "Who is staying in Rome, and for how many nights?",
        "server": "booking",
        "tool": "book_room",
    }
    assert question.policy.allowed_actions == ("accept", "decline", "cancel")
    call = value["agent_wait"][MCP_KEY]
    assert (call["tool"], call["arguments"]) == ("book_room", {"city": "Rome"})
    # Only the multi round-trip pattern has a state and a key to keep.
    assert (call["request_state"] is not None, call["key"] is not None) == (
        mode != "legacy",
        mode != "legacy",
    )


class Parked(Exception):
    """What a framework's interrupt raises the first time."""


@pytest.mark.parametrize("mode", ["2026-07-28", "legacy"])
async def test_what_park_raises_is_raised_as_itself_after_the_client_closes(
    mode: str, tmp_path: Path
) -> None:
    def park(value: dict[str, Any]) -> Any:
        raise Parked(value["question"]["text"])

    bridge = ElicitationBridge(park, server="booking")
    with pytest.raises(Parked, match="Who is staying in Rome"):
        await bridge.call_tool(booking(tmp_path / "log", mode), "book_room", {"city": "Rome"})

    # The bridge is free for the next call (the run resuming).
    resumed = ElicitationBridge(lambda value: {"action": "decline"}, server="booking")
    done = await resumed.call_tool(booking(tmp_path / "log", mode), "book_room", {"city": "Rome"})
    assert done.content[0].type == "text"
    assert done.content[0].text == "not booked: decline"


async def never(context: Any, params: Any) -> types.ElicitResult:
    """Declares the elicitation capability; under 2026-07-28 the server never calls it."""
    raise AssertionError("a server-initiated elicitation under 2026-07-28")


async def test_a_kept_request_state_retries_the_call_with_the_answer(tmp_path: Path) -> None:
    client = booking(tmp_path / "log", "2026-07-28")
    client.elicitation_callback = never
    async with client:
        first = await client.session.call_tool(
            "book_room", {"city": "Lima"}, allow_input_required=True
        )
        assert isinstance(first, types.InputRequiredResult)
        assert first.input_requests
        ((key, request),) = first.input_requests.items()
        assert isinstance(request, types.ElicitRequest)
        value = elicitation_value(
            request.params,
            server="booking",
            tool="book_room",
            arguments={"city": "Lima"},
            key=key,
            request_state=first.request_state,
        )

        done = await retry_with_answer(client, value, {"action": "accept", "content": GUEST})

    assert isinstance(done, types.CallToolResult)
    assert done.content[0].type == "text"
    assert done.content[0].text == "booked 3 nights in Lima for Ada"


async def test_retrying_a_value_that_is_no_parked_elicitation_is_refused(tmp_path: Path) -> None:
    async with booking(tmp_path / "log", "2026-07-28") as client:
        with pytest.raises(InputRequestRefused, match=r"no agent_wait\.mcp\.key"):
            await retry_with_answer(client, {"question": "x"}, {"action": "decline"})


async def test_a_call_asking_more_often_than_max_rounds_is_stopped(tmp_path: Path) -> None:
    bridge = ElicitationBridge(lambda v: {"action": "cancel"}, server="booking", max_rounds=0)
    with pytest.raises(InputRoundsExceeded, match="tool 'book_room' on server 'booking'"):
        await bridge.call_tool(booking(tmp_path / "log", "2026-07-28"), "book_room", {"city": "X"})


async def test_a_client_with_its_own_elicitation_callback_is_refused(tmp_path: Path) -> None:
    async def mine(context: Any, params: Any) -> types.ElicitResult:
        return types.ElicitResult(action="decline")

    client = booking(tmp_path / "log", "legacy")
    client.elicitation_callback = mine
    bridge = ElicitationBridge(lambda v: None, server="booking")
    with pytest.raises(ValueError, match=r"client\.elicitation_callback: already set"):
        await bridge.call_tool(client, "book_room", {"city": "X"})


def test_a_url_elicitation_is_passed_on_as_its_link() -> None:
    params = types.ElicitRequestURLParams(
        message="Sign in to the booking site.",
        url="https://booking.example/connect?session=7",
        elicitation_id="e-7",
    )

    value = elicitation_value(params, server="booking", tool="book_room")

    assert value["question"] == {
        "text": "Sign in to the booking site.",
        "server": "booking",
        "tool": "book_room",
        "url": "https://booking.example/connect?session=7",
    }
    schema = answer_schema(params)
    assert schema_problem(schema, {"action": "accept"}) is None
    assert schema_problem(schema, {"action": "accept", "content": {}}) == (
        "answer: Additional properties are not allowed ('content' was unexpected) "
        "(the question's answer_schema)"
    )
    assert schema["examples"] == [{"action": "accept"}]


FORM = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "nights": {"type": "integer"}},
    "required": ["name", "nights"],
}


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"action": "accept", "content": GUEST}, None),
        ({"action": "decline"}, None),
        ({"action": "cancel"}, None),
        (
            {"action": "accept", "content": {"name": "Ada"}},
            "answer.content: 'nights' is a required",
        ),
        ({"action": "accept"}, "answer: 'content' is a required property"),
        ({"action": "decline", "content": GUEST}, "answer: Additional properties"),
        ({"action": "approve"}, "answer.action: 'approve' is not one of"),
    ],
)
def test_a_form_answer_is_checked_against_the_requested_schema_by_its_action(
    answer: Any, problem: str | None
) -> None:
    schema = answer_schema(types.ElicitRequestFormParams(message="?", requested_schema=FORM))

    found = schema_problem(schema, answer)

    assert (found or "").startswith(problem or ""), found
    assert (found is None) == (problem is None)
    assert schema_problem(schema, schema["examples"][0]) is None


def test_a_request_state_longer_than_a_question_keeps_is_refused_naming_its_size() -> None:
    params = types.ElicitRequestFormParams(message="?", requested_schema={"type": "object"})
    state = "s" * (REQUEST_STATE_LIMIT + 1)

    with pytest.raises(
        InputRequestRefused, match=rf"requestState: {REQUEST_STATE_LIMIT + 1} bytes"
    ):
        elicitation_value(params, server="booking", tool="t", request_state=state)
    kept = elicitation_value(params, server="b", tool="t", request_state=state[:-1])
    assert kept["agent_wait"][MCP_KEY]["request_state"] == state[:-1]


def test_a_policy_given_replaces_the_default_actions() -> None:
    params = types.ElicitRequestFormParams(message="?", requested_schema={"type": "object"})
    policy = WaitPolicy(allowed_actions=("accept", "decline"), timeout="PT1H")

    value = elicitation_value(params, server="b", tool="t", policy=policy)

    assert question_from_value("q", value).policy == policy


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ("yes", "answer: expected an elicitation result object, got str"),
        ({"action": "approve"}, "answer.action: 'approve' is not one of"),
        ({"action": "decline", "content": {"a": 1}}, "answer.content: only an accept"),
    ],
)
def test_an_answer_that_is_no_elicitation_result_is_refused_naming_the_field(
    answer: Any, problem: str
) -> None:
    with pytest.raises(InputRequestRefused, match=problem):
        elicit_result(answer)


def test_an_answer_becomes_the_elicit_result() -> None:
    assert elicit_result({"action": "accept", "content": GUEST}) == types.ElicitResult(
        action="accept", content=GUEST
    )
    assert elicit_result({"action": "cancel"}) == types.ElicitResult(action="cancel")
