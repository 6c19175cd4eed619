"""``requires_approval`` tools and ``CallDeferred`` calls: published as questions and resumed."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    CallDeferred,
    DeferredToolRequests,
    RunContext,
    ToolApproved,
    ToolDenied,
)

from agent_wait.core import InvalidAnswer, MemoryAnnounce, WaitPolicy
from agent_wait.host.adapter import wait_payload
from agent_wait.pydantic_ai import deferred_results, publish_interrupts, questions_in, wait
from tests.pydantic_ai.scripted import Script, seen_by_model


def mixed_agent(script: Script, runs: list[str]) -> Agent[None, Any]:
    """Four kinds of deferred call in one response, plus an ordinary tool."""
    agent = Agent(script.model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(WaitPolicy(timeout="PT1H", tags={"team": "ops"}))
    def restart(ctx: RunContext[None], service: str) -> str:
        runs.append(f"restart {service}")
        return f"restarted {service}"

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        runs.append(f"delete {path}")
        return f"deleted {path}"

    @agent.tool_plain
    def run_job(job: str) -> str:
        runs.append(f"job {job}")
        raise CallDeferred(metadata={"queue": "batch"})

    @agent.tool_plain
    def ask_user(prompt: str) -> str:
        raise CallDeferred(kind="question")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        runs.append("add")
        return a + b

    return agent


CALLS = (
    ("restart", {"service": "api"}),
    ("delete_file", {"path": "/tmp/x"}),
    ("run_job", {"job": "nightly"}),
    ("ask_user", {"prompt": "color?"}),
    ("add", {"a": 1, "b": 2}),
)


def test_every_deferred_call_is_published(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    runs: list[str] = []
    agent = mixed_agent(script(*CALLS), runs)
    parked = agent.run_sync("go")
    report = publish_interrupts(parked, "t-1", inbox)

    assert report.ok
    # Approvals first, then deferred calls; the ordinary tool is not a question.
    assert report.question_ids == ["restart-1-0", "delete_file-1-1", "run_job-1-2", "ask_user-1-3"]
    by_id = {e.question_id: e for e in inbox.envelopes}
    restart = by_id["restart-1-0"]
    assert restart.question == {"function": "restart", "args": {"service": "api"}}
    assert restart.source is not None
    assert restart.source.function == "restart"
    assert restart.tags == {"team": "ops"}
    delete = by_id["delete_file-1-1"]
    assert delete.question == {"function": "delete_file", "args": {"path": "/tmp/x"}}
    assert delete.source is None
    assert delete.tags == {}
    assert delete.expires_at is None
    assert by_id["run_job-1-2"].question == {
        "function": "run_job",
        "args": {"job": "nightly"},
        "metadata": {"queue": "batch"},
    }
    assert by_id["ask_user-1-3"].question == {"function": "ask_user", "args": {"prompt": "color?"}}
    assert sorted(runs) == ["add", "job nightly"]  # tools run concurrently


def test_each_deferred_call_carries_its_tool_call_as_context(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    # Two calls of the same deferred tool with the same args ask the same question: only the
    # context (and the id) tells them apart.
    agent = mixed_agent(
        script(("ask_user", {"prompt": "go?"}), ("ask_user", {"prompt": "go?"})), []
    )
    publish_interrupts(agent.run_sync("go"), "t-1", inbox, strict=True)

    first, second = inbox.envelopes
    assert first.question == second.question
    assert first.source is None
    assert [json.loads(e.to_json())["context"] for e in inbox.envelopes] == [
        {"tool": "ask_user", "tool_call_id": "ask_user-1-0"},
        {"tool": "ask_user", "tool_call_id": "ask_user-1-1"},
    ]


def test_one_resume_answers_approvals_and_calls(script: Callable[..., Script]) -> None:
    runs: list[str] = []
    agent = mixed_agent(script(*CALLS), runs)
    parked = agent.run_sync("go")
    runs.clear()

    results = deferred_results(
        parked,
        {"thread_id": "t-1", "question_id": "restart-1-0", "answer": {"action": "approve"}},
        {
            "thread_id": "t-1",
            "question_id": "delete_file-1-1",
            "answer": {"action": "approve", "args": {"path": "/tmp/y"}},
        },
        {"thread_id": "t-1", "question_id": "run_job-1-2", "answer": {"rows": 42}},
        {"thread_id": "t-1", "question_id": "ask_user-1-3", "answer": "blue"},
    )
    # A call that is not ours gets the args rule as override_args (merged with its own).
    assert results.approvals == {
        "restart-1-0": ToolApproved(),
        "delete_file-1-1": ToolApproved(override_args={"path": "/tmp/y"}),
    }
    # CallDeferred questions are answered with their result, not an approval.
    assert results.calls == {"run_job-1-2": {"rows": 42}, "ask_user-1-3": "blue"}
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)

    assert sorted(runs) == ["delete /tmp/y", "restart api"]  # run_job is not re-run
    seen = seen_by_model(done.output)
    assert seen["run_job-1-2"]["content"] == {"rows": 42}
    assert seen["ask_user-1-3"]["content"] == "blue"
    assert seen["delete_file-1-1"]["content"] == "deleted /tmp/y"


def test_requires_approval_rejected_is_denied_with_the_answer(
    script: Callable[..., Script],
) -> None:
    runs: list[str] = []
    agent = mixed_agent(script(("delete_file", {"path": "/etc"})), runs)
    parked = agent.run_sync("go")
    results = deferred_results(
        parked, {"thread_id": "t", "question_id": "delete_file-1-0", "answer": {"action": "reject"}}
    )
    assert results.approvals == {"delete_file-1-0": ToolDenied('{"action":"reject"}')}
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)
    assert runs == []
    assert seen_by_model(done.output)["delete_file-1-0"] == {
        "content": '{"action":"reject"}',
        "outcome": "denied",
    }


def test_requires_approval_args_edit_must_name_its_parameters(
    script: Callable[..., Script],
) -> None:
    agent = mixed_agent(script(("delete_file", {"path": "/etc"})), [])
    parked = agent.run_sync("go")
    with pytest.raises(InvalidAnswer, match=r"\['force'\].*delete_file"):
        deferred_results(
            parked,
            {
                "thread_id": "t",
                "question_id": "delete_file-1-0",
                "answer": {"action": "approve", "args": {"force": True}},
            },
        )


def test_call_deferred_with_our_payload_carries_its_policy(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    agent = Agent(
        script(("transfer", {"amount": 5})).model, output_type=[str, DeferredToolRequests]
    )
    policy = WaitPolicy(timeout="P1D", tags={"approver_group": "treasury"})

    @agent.tool_plain
    def transfer(amount: int) -> str:
        question = {"function": "transfer", "args": {"amount": amount}}
        raise CallDeferred(metadata=wait_payload(question, policy, None))

    publish_interrupts(agent.run_sync("go"), "t", inbox)
    [envelope] = inbox.envelopes
    assert envelope.question == {"function": "transfer", "args": {"amount": 5}}
    assert envelope.tags == {"approver_group": "treasury"}
    assert envelope.expires_at is not None


def test_questions_in_accepts_results_and_requests_only(script: Callable[..., Script]) -> None:
    agent = mixed_agent(script(("delete_file", {"path": "/etc"})), [])
    parked = agent.run_sync("go")
    assert isinstance(parked.output, DeferredToolRequests)
    assert questions_in(parked.output) == questions_in(parked)
    assert questions_in(DeferredToolRequests()) == []
    with pytest.raises(TypeError, match="AgentRunResult or DeferredToolRequests, got dict"):
        questions_in({"approvals": []})


def test_deferred_results_refuses_what_it_cannot_place(script: Callable[..., Script]) -> None:
    agent = mixed_agent(script(("delete_file", {"path": "/etc"})), [])
    parked = agent.run_sync("go")
    ok = {"thread_id": "t", "question_id": "delete_file-1-0", "answer": {"action": "approve"}}
    with pytest.raises(
        ValueError, match=r"answers\[0\]\.question_id: 'nope' is not pending.*delete_file-1-0"
    ):
        deferred_results(parked, {**ok, "question_id": "nope"})
    with pytest.raises(ValueError, match=r"answers\[1\].*answered twice"):
        deferred_results(parked, ok, ok)
    with pytest.raises(ValueError, match=r"(?s)answers\[0\].*answer.*Field required"):
        deferred_results(parked, {"thread_id": "t", "question_id": "delete_file-1-0"})
    done = agent.run_sync(
        message_history=parked.all_messages(), deferred_tool_results=deferred_results(parked, ok)
    )
    with pytest.raises(ValueError, match="nothing to answer"):
        deferred_results(done, ok)
