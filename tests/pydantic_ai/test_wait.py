"""``@wait`` on real Pydantic AI agents (offline FunctionModel), published and resumed by hand."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest
from pydantic_ai import (
    Agent,
    ApprovalRequired,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)

from agent_wait.core import (
    InvalidAnswer,
    MemoryAnnounce,
    WaitPolicy,
    canonical_json,
    derive_question_id,
)
from agent_wait.pydantic_ai import (
    apublish_interrupts,
    deferred_results,
    hitl,
    publish_interrupts,
    questions_in,
    wait,
)
from tests.pydantic_ai.scripted import Script, seen_by_model

FINANCE = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    answer_ttl="PT15M",
    tags={"approver_group": "finance"},
)
REFUND = ("issue_refund", {"order_id": "order-4471", "amount": 41000})
ENVELOPE_FIELDS = [
    "type", "event_id", "thread_id", "question_id", "question", "allowed_actions", "expires_at",
    "default", "answer_ttl", "source", "reply_to", "reply_with", "correlation", "tags",
]  # fmt: skip


def refund_agent(
    script: Script, runs: list[dict[str, Any]], **wait_options: Any
) -> Agent[Any, Any]:
    agent = Agent(script.model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(FINANCE, **wait_options)
    def issue_refund(ctx: RunContext[Any], order_id: str, amount: int) -> str:
        runs.append({"order_id": order_id, "amount": amount})
        return f"refunded {amount} on {order_id}"

    return agent


def answer(result: Any, value: Any, index: int = 0) -> DeferredToolResults:
    question = questions_in(result)[index]
    return deferred_results(
        result, {"thread_id": "order-4471", "question_id": question.question_id, "answer": value}
    )


def test_park_publishes_the_contract_envelope_field_by_field(
    script: Callable[..., Script], inbox: MemoryAnnounce, clock: Callable[[], datetime]
) -> None:
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs)

    result = agent.run_sync("refund order-4471")
    report = publish_interrupts(
        result, "order-4471", inbox, reply_to={"queue": "answers"}, clock=clock
    )

    assert runs == []
    assert isinstance(result.output, DeferredToolRequests)
    [call] = result.output.approvals
    assert report.ok
    assert report.question_ids == [call.tool_call_id] == ["issue_refund-1-0"]
    [envelope] = inbox.envelopes
    data = json.loads(envelope.to_json())
    # The optional fields follow the contract's: the answer it takes, the tool call that asked.
    assert list(data) == [*ENVELOPE_FIELDS, "answer_schema", "context"]
    assert data["answer_schema"]["properties"]["action"] == {"enum": ["approve", "reject"]}
    assert data["answer_schema"]["properties"]["args"]["properties"] == {
        "order_id": {"type": "string"},
        "amount": {"type": "integer"},
    }
    assert data["context"] == {"tool": "issue_refund", "tool_call_id": "issue_refund-1-0"}
    assert data["type"] == "wait.created"
    assert re.fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", data["event_id"])
    assert data["thread_id"] == "order-4471"
    assert data["question_id"] == "issue_refund-1-0"
    # The RunContext parameter is never published.
    assert data["question"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert data["allowed_actions"] == ["approve", "reject"]
    assert data["expires_at"] == "2026-09-14T09:00:00Z"
    assert data["default"] == {"action": "reject", "reason": "no response within P3D"}
    assert data["answer_ttl"] == "PT15M"
    assert data["source"] == {"function": "issue_refund"}
    assert data["reply_to"] == {"queue": "answers"}
    assert data["reply_with"] == {
        "thread_id": "order-4471",
        "question_id": "issue_refund-1-0",
        "answer": None,
    }
    assert data["correlation"] is None
    assert data["tags"] == {"approver_group": "finance"}
    assert envelope.dedupe_key == "wait.created:order-4471:issue_refund-1-0"
    # The parked payload rides in the deferred call's metadata.
    assert result.output.metadata[call.tool_call_id]["question"] == data["question"]


def test_approve_runs_the_body_once(script: Callable[..., Script], inbox: MemoryAnnounce) -> None:
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs)
    parked = agent.run_sync("refund")
    publish_interrupts(parked, "order-4471", inbox)

    results = answer(parked, {"action": "approve", "note": "within budget"})
    assert results.approvals == {"issue_refund-1-0": ToolApproved()}
    assert results.metadata == {"issue_refund-1-0": {"action": "approve", "note": "within budget"}}
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)

    assert runs == [{"order_id": "order-4471", "amount": 41000}]
    assert seen_by_model(done.output)["issue_refund-1-0"] == {
        "content": "refunded 41000 on order-4471",
        "outcome": "success",
    }
    assert questions_in(done) == []
    assert publish_interrupts(done, "order-4471", inbox).envelopes == ()
    assert len(inbox.envelopes) == 1


def test_reject_never_calls_the_tool_and_the_model_sees_the_answer(
    script: Callable[..., Script],
) -> None:
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs)
    parked = agent.run_sync("refund")
    verdict = {"action": "reject", "reason": "over budget"}

    results = answer(parked, verdict)
    assert results.approvals == {"issue_refund-1-0": ToolDenied(canonical_json(verdict))}
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)

    assert runs == []
    seen = seen_by_model(done.output)["issue_refund-1-0"]
    assert seen["outcome"] == "denied"
    assert json.loads(seen["content"]) == verdict


def test_approve_with_edited_args_runs_with_them(script: Callable[..., Script]) -> None:
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs)
    parked = agent.run_sync("refund")

    results = answer(parked, {"action": "approve", "args": {"amount": 20000}})
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)

    assert runs == [{"order_id": "order-4471", "amount": 20000}]
    assert (
        seen_by_model(done.output)["issue_refund-1-0"]["content"] == "refunded 20000 on order-4471"
    )


def test_edited_args_naming_unknown_parameters_are_refused_before_resuming(
    script: Callable[..., Script],
) -> None:
    agent = refund_agent(script(REFUND), [])
    parked = agent.run_sync("refund")
    with pytest.raises(InvalidAnswer, match="amonut"):
        answer(parked, {"action": "approve", "args": {"amonut": 1}})
    with pytest.raises(InvalidAnswer, match=r"answer\.args"):
        answer(parked, {"action": "approve", "args": [1]})


def test_a_host_written_from_the_message_formats_works(script: Callable[..., Script]) -> None:
    """A host written from the message formats alone, without agent-wait's builder."""
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs)
    parked = agent.run_sync("refund")
    qid = questions_in(parked)[0].question_id

    value = {"action": "approve", "args": {"amount": 1}}
    done = agent.run_sync(
        None,
        message_history=parked.all_messages(),
        deferred_tool_results=DeferredToolResults(
            approvals={qid: ToolApproved()}, metadata={qid: value}
        ),
    )
    assert runs == [{"order_id": "order-4471", "amount": 1}]
    assert "refunded 1" in seen_by_model(done.output)[qid]["content"]

    # Plain approval without metadata means {"action": "approve"}.
    again = agent.run_sync("refund")
    qid = questions_in(again)[0].question_id
    agent.run_sync(
        message_history=again.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={qid: True}),
    )
    assert runs[-1] == {"order_id": "order-4471", "amount": 41000}


@pytest.mark.parametrize(
    "verdict",
    [{"action": "reject", "why": "freeze"}, {"action": "approve"}, "later", ["a", 1], None],
)
def test_decision_parameter_receives_the_whole_answer(
    script: Callable[..., Script], verdict: Any
) -> None:
    received: list[Any] = []
    model = script(("deploy", {"service": "api"}))
    agent = Agent(model.model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait(decision="verdict")
    def deploy(ctx: RunContext[None], service: str, verdict: Any) -> str:
        received.append(verdict)
        return f"deployed {service}"

    parked = agent.run_sync("deploy")
    [question] = questions_in(parked)
    assert question.question == {"function": "deploy", "args": {"service": "api"}}
    # Neither the run context nor the decision parameter is offered to the model.
    assert model.schemas["deploy"]["properties"] == {"service": {"type": "string"}}
    results = deferred_results(
        parked, {"thread_id": "t", "question_id": question.question_id, "answer": verdict}
    )
    # The body must run whatever the answer is, so the call is approved and the answer rides along.
    assert results.approvals == {question.question_id: ToolApproved()}
    agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)
    assert received == [verdict]


def test_when_predicate_skips_asks_and_fails_safe(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    runs: list[dict[str, Any]] = []
    small = ("issue_refund", {"order_id": "o-1", "amount": 50})
    agent = refund_agent(script(small), runs, when=lambda order_id, amount: amount > 1000)
    done = agent.run_sync("refund")
    # Skipped: the body ran without asking and nothing is published.
    assert runs == [{"order_id": "o-1", "amount": 50}]
    assert questions_in(done) == []
    assert publish_interrupts(done, "o-1", inbox).envelopes == ()

    agent = refund_agent(script(REFUND), runs, when=lambda order_id, amount: amount > 1000)
    parked = agent.run_sync("refund")
    assert len(runs) == 1
    assert [q.question_id for q in questions_in(parked)] == ["issue_refund-1-0"]

    def broken(order_id: str, amount: int) -> bool:
        raise RuntimeError("predicate bug")

    agent = refund_agent(script(small), runs, when=broken)
    parked = agent.run_sync("refund")
    assert len(runs) == 1
    assert [q.question_id for q in questions_in(parked)] == ["issue_refund-1-0"]


def test_async_mode_returns_the_pending_result_and_publishes_once(
    script: Callable[..., Script], inbox: MemoryAnnounce, clock: Callable[[], datetime]
) -> None:
    runs: list[dict[str, Any]] = []
    agent = refund_agent(script(REFUND), runs, mode="async", announce=inbox, clock=clock)

    done = agent.run_sync("refund", deps={"thread_id": "order-4471"})

    expected = derive_question_id("order-4471", "issue_refund", REFUND[1])
    assert runs == []
    assert seen_by_model(done.output)["issue_refund-1-0"]["content"] == {
        "status": "pending_approval",
        "question_id": expected,
        "function": "issue_refund",
    }
    [envelope] = inbox.envelopes
    assert envelope.question_id == expected
    assert envelope.thread_id == "order-4471"
    assert envelope.expires_at == "2026-09-14T09:00:00Z"
    assert envelope.source is not None
    assert envelope.source.function == "issue_refund"
    # Nothing is parked: the run finished, the host has nothing to publish.
    assert questions_in(done) == []


def test_async_mode_reads_the_thread_id_from_deps_attribute_or_fails_clearly(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    class Deps:
        thread_id = "order-9"

    agent = refund_agent(script(REFUND), [], mode="async", announce=inbox)
    agent.run_sync("refund", deps=Deps())
    assert inbox.envelopes[0].thread_id == "order-9"

    with pytest.raises(ValueError, match=r"deps\.thread_id.*'thread_id'.*NoneType"):
        agent.run_sync("refund")
    with pytest.raises(ValueError, match=r"deps\.thread_id.*got ''"):
        agent.run_sync("refund", deps={"thread_id": ""})


def test_expires_at_follows_the_policy_from_the_injected_clock(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    agent = refund_agent(script(REFUND), [])
    parked = agent.run_sync("refund")
    from datetime import UTC

    publish_interrupts(parked, "t", inbox, clock=lambda: datetime(2030, 1, 31, 23, 30, tzinfo=UTC))
    assert inbox.envelopes[-1].expires_at == "2030-02-03T23:30:00Z"

    agent = Agent(script(("ping", {})).model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @wait
    def ping(ctx: RunContext[None]) -> str:
        return "pong"

    publish_interrupts(
        agent.run_sync("go"), "t", inbox, clock=lambda: datetime(2030, 1, 1, tzinfo=UTC)
    )
    assert inbox.envelopes[-1].expires_at is None
    assert inbox.envelopes[-1].question == {"function": "ping", "args": {}}


async def test_async_tools_and_await_agent_run(
    script: Callable[..., Script], inbox: MemoryAnnounce
) -> None:
    runs: list[int] = []
    agent = Agent(script(REFUND).model, output_type=[str, DeferredToolRequests])

    @agent.tool
    @hitl(FINANCE)
    async def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    parked = await agent.run("refund")
    report = await apublish_interrupts(parked, "order-4471", inbox)
    assert report.ok
    assert report.question_ids == ["issue_refund-1-0"]
    assert runs == []

    results = answer(parked, {"action": "approve"})
    done = await agent.run(message_history=parked.all_messages(), deferred_tool_results=results)
    assert runs == [41000]
    assert seen_by_model(done.output)["issue_refund-1-0"]["content"] == "refunded 41000"


def test_hitl_is_wait() -> None:
    assert hitl is wait


def test_a_tool_without_run_context_is_refused_at_decoration() -> None:
    with pytest.raises(TypeError, match=r"RunContext.*@agent\.tool_plain"):

        @wait
        def issue_refund(order_id: str, amount: int) -> str:
            return "ran"


def test_wait_on_a_tool_object_is_refused() -> None:
    from pydantic_ai import Tool

    def issue_refund(ctx: RunContext[None], amount: int) -> str:
        return "ran"

    with pytest.raises(TypeError, match=r"@agent\.tool on top"):
        wait(FINANCE)(Tool(issue_refund))


def test_string_annotations_are_recognised() -> None:
    namespace: dict[str, Any] = {}
    exec(  # a module with `from __future__ import annotations` gives string annotations
        "from __future__ import annotations\n"
        "import pydantic_ai\n"
        "def issue_refund(ctx: pydantic_ai.RunContext[None], amount: int) -> str:\n"
        "    return 'ran'\n",
        namespace,
    )
    decorated = wait(namespace["issue_refund"])
    assert decorated.__agent_wait__.hidden == frozenset({"ctx"})


def test_approval_required_from_other_tools_is_untouched(script: Callable[..., Script]) -> None:
    """A tool that raises ApprovalRequired itself is published with its own metadata."""
    agent = Agent(script(("wipe", {"disk": "sda"})).model, output_type=[str, DeferredToolRequests])

    @agent.tool
    def wipe(ctx: RunContext[None], disk: str) -> str:
        if not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"risk": "high"})
        return "wiped"

    [question] = questions_in(agent.run_sync("go"))
    assert question.question == {
        "function": "wipe",
        "args": {"disk": "sda"},
        "metadata": {"risk": "high"},
    }
    assert question.source is None
    assert question.policy == WaitPolicy()


def test_decision_is_none_when_the_body_runs_without_asking(script: Callable[..., Script]) -> None:
    received: list[Any] = []
    agent = Agent(
        script(("deploy", {"service": "api"})).model, output_type=[str, DeferredToolRequests]
    )

    @agent.tool
    @wait(when=lambda service: service == "db", decision="verdict")
    def deploy(ctx: RunContext[None], service: str, verdict: Any) -> str:
        received.append(verdict)
        return f"deployed {service}"

    done = agent.run_sync("deploy")
    assert received == [None]
    assert questions_in(done) == []


def test_the_run_context_is_not_in_the_schema_the_model_sees(script: Callable[..., Script]) -> None:
    model = script(REFUND)
    refund_agent(model, []).run_sync("refund")
    schema = model.schemas["issue_refund"]
    assert sorted(schema["properties"]) == ["amount", "order_id"]
    assert schema["required"] == ["order_id", "amount"]
