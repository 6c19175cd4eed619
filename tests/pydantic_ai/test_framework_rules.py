"""What Pydantic AI itself does with deferred calls, checked on the installed version.

These pin the framework behaviour the docs and ``handle_message`` rely on; if one fails after
an upgrade, docs/frameworks/pydantic-ai.md is out of date.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from pydantic_ai import (
    Agent,
    ApprovalRequired,
    CallDeferred,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
    UserError,
)

from tests.pydantic_ai.scripted import Script, seen_by_model


def approval_agent(script: Script, runs: list[str]) -> Agent[None, object]:
    agent = Agent(script.model, output_type=[str, DeferredToolRequests])

    @agent.tool
    def wipe(ctx: RunContext[None], disk: str) -> str:
        runs.append(f"{disk} approved={ctx.tool_call_approved} metadata={ctx.tool_call_metadata}")
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"disk": disk})
        return f"wiped {disk}"

    return agent


def test_an_approved_tool_runs_again_from_the_start_with_the_metadata(
    script: Callable[..., Script],
) -> None:
    runs: list[str] = []
    agent = approval_agent(script(("wipe", {"disk": "sda"})), runs)
    parked = agent.run_sync("go")
    agent.run_sync(
        message_history=parked.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={"wipe-1-0": ToolApproved()}, metadata={"wipe-1-0": {"action": "approve"}}
        ),
    )
    assert runs == [
        "sda approved=False metadata=None",
        "sda approved=True metadata={'action': 'approve'}",
    ]


def test_tool_denied_never_calls_the_tool_and_the_model_gets_the_message(
    script: Callable[..., Script],
) -> None:
    runs: list[str] = []
    agent = approval_agent(script(("wipe", {"disk": "sda"})), runs)
    parked = agent.run_sync("go")
    done = agent.run_sync(
        message_history=parked.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"wipe-1-0": ToolDenied("no way")}),
    )
    assert len(runs) == 1
    assert seen_by_model(done.output)["wipe-1-0"] == {"content": "no way", "outcome": "denied"}


def test_every_pending_call_must_be_answered(script: Callable[..., Script]) -> None:
    runs: list[str] = []
    agent = approval_agent(script(("wipe", {"disk": "sda"}), ("wipe", {"disk": "sdb"})), runs)
    parked = agent.run_sync("go")
    with pytest.raises(UserError, match="need to be provided for all deferred tool calls"):
        agent.run_sync(
            message_history=parked.all_messages(),
            deferred_tool_results=DeferredToolResults(approvals={"wipe-1-0": True}),
        )
    assert len(runs) == 2  # the failed resume ran nothing


def test_a_new_prompt_on_a_parked_history_is_refused(script: Callable[..., Script]) -> None:
    agent = approval_agent(script(("wipe", {"disk": "sda"})), [])
    parked = agent.run_sync("go")
    with pytest.raises(UserError, match="unprocessed tool calls"):
        agent.run_sync("again", message_history=parked.all_messages())


def test_call_deferred_is_answered_in_calls_and_not_re_run(script: Callable[..., Script]) -> None:
    runs: list[str] = []
    agent = Agent(script(("job", {"n": 1})).model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain
    def job(n: int) -> int:
        runs.append("job")
        raise CallDeferred(metadata={"queue": "batch"})

    parked = agent.run_sync("go")
    assert isinstance(parked.output, DeferredToolRequests)
    assert parked.output.kind("job-1-0") == "external"
    done = agent.run_sync(
        message_history=parked.all_messages(),
        deferred_tool_results=DeferredToolResults(calls={"job-1-0": {"rows": 3}}),
    )
    assert runs == ["job"]
    assert seen_by_model(done.output)["job-1-0"]["content"] == {"rows": 3}


def test_the_deferred_metadata_is_not_in_the_message_history(
    script: Callable[..., Script],
) -> None:
    """Why handle_message records the pending requests in the response's metadata itself."""
    agent = approval_agent(script(("wipe", {"disk": "sda"})), [])
    parked = agent.run_sync("go")
    assert isinstance(parked.output, DeferredToolRequests)
    assert parked.output.metadata == {"wipe-1-0": {"disk": "sda"}}
    assert all(message.metadata is None for message in parked.all_messages())


def test_a_deferred_call_needs_deferred_tool_requests_in_the_output_type(
    script: Callable[..., Script],
) -> None:
    agent = Agent(script(("wipe", {"disk": "sda"})).model)

    @agent.tool
    def wipe(ctx: RunContext[None], disk: str) -> str:
        raise ApprovalRequired

    with pytest.raises(UserError, match="DeferredToolRequests"):
        agent.run_sync("go")
