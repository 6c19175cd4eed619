"""@wait on real Strands tools, driven by a scripted offline model, published by publish_interrupts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from strands import Agent, ToolContext, tool

from agent_wait.core import CallContext, MemoryAnnounce, WaitPolicy, derive_question_id
from agent_wait.strands import (
    apublish_interrupts,
    interrupt_responses,
    publish_interrupts,
    questions_in,
    wait,
)
from tests.strands.conftest import Tables, TextGuard
from tests.strands.fake_model import Call, ScriptedModel

Factory = Callable[[ScriptedModel, Sequence[Any]], Callable[[str], Agent]]
NOW = datetime(2026, 9, 11, 9, 0, 0, tzinfo=UTC)
POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    answer_ttl="PT15M",
    tags={"approver_group": "finance"},
    correlation={"provider": "stripe", "id": "re_4471"},
)
REFUND = Call("issue_refund", {"order_id": "order-4471", "amount": 41000})
ENVELOPE_FIELDS = [
    "type",
    "event_id",
    "thread_id",
    "question_id",
    "question",
    "allowed_actions",
    "expires_at",
    "default",
    "answer_ttl",
    "source",
    "reply_to",
    "reply_with",
    "correlation",
    "tags",
]


def refund_tool(
    runs: list[dict[str, Any]], policy: WaitPolicy | None = POLICY, **options: Any
) -> Any:
    @tool(context=True)
    @wait(policy, **options)
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append({"order_id": order_id, "amount": amount})
        return f"refunded {amount} on {order_id}"

    return issue_refund


def answer(envelope_reply_with: Any, value: Any) -> list[dict[str, Any]]:
    return interrupt_responses({**envelope_reply_with.model_dump(), "answer": value})


def test_park_envelope_matches_the_contract_then_approve_runs_once(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    runs: list[dict[str, Any]] = []
    model = ScriptedModel([REFUND])
    agent_for = factory(model, [refund_tool(runs)])

    agent = agent_for("order-4471")
    result = agent("refund order-4471")
    assert result.stop_reason == "interrupt"
    assert runs == []
    report = publish_interrupts(
        result, agent.session_id, inbox, reply_to={"queue": "approvals"}, clock=lambda: NOW
    )
    assert report.ok
    [envelope] = inbox.envelopes
    [interrupt] = result.interrupts or []

    data = json.loads(envelope.to_json())
    # The optional fields follow the contract's: the answer it takes, the tool call that asked.
    assert list(data) == [*ENVELOPE_FIELDS, "answer_schema", "context"]
    assert data["answer_schema"]["properties"]["action"] == {"enum": ["approve", "reject"]}
    assert data["answer_schema"]["properties"]["args"]["properties"] == {
        "order_id": {"type": "string"},
        "amount": {"type": "integer"},
    }
    assert data["context"] == {"tool": "issue_refund", "tool_call_id": "call_1_0"}
    assert data["type"] == "wait.created"
    assert re.fullmatch(r"[0-7][0-9A-HJKMNP-TV-Z]{25}", data["event_id"])
    assert data["thread_id"] == "order-4471"
    assert data["question_id"] == interrupt.id
    assert interrupt.name == "agent_wait:issue_refund"
    # tool_context is injected by Strands: never part of the question.
    assert data["question"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert data["allowed_actions"] == ["approve", "reject"]
    assert data["expires_at"] == "2026-09-14T09:00:00Z"
    assert data["default"] == {"action": "reject", "reason": "no response within P3D"}
    assert data["answer_ttl"] == "PT15M"
    assert data["source"] == {"function": "issue_refund"}
    assert data["reply_to"] == {"queue": "approvals"}
    assert data["reply_with"] == {
        "thread_id": "order-4471",
        "question_id": interrupt.id,
        "answer": None,
    }
    assert data["correlation"] == {"provider": "stripe", "id": "re_4471"}
    assert data["tags"] == {"approver_group": "finance"}
    assert envelope.dedupe_key == f"wait.created:order-4471:{interrupt.id}"

    # A fresh Agent on the same FileSessionManager session resumes the parked call.
    resumed = agent_for("order-4471")(answer(envelope.reply_with, {"action": "approve"}))
    assert resumed.stop_reason == "end_turn"
    assert runs == [{"order_id": "order-4471", "amount": 41000}]
    assert model.tool_results[-1]["text"] == "refunded 41000 on order-4471"
    assert questions_in(resumed) == []
    assert publish_interrupts(resumed, "order-4471", inbox).envelopes == ()
    assert len(inbox.envelopes) == 1


def test_tool_spec_hides_tool_context(factory: Factory) -> None:
    spec = refund_tool([]).tool_spec
    assert set(spec["inputSchema"]["json"]["properties"]) == {"order_id", "amount"}


def test_reject_does_not_run_and_the_model_sees_the_answer(factory: Factory) -> None:
    runs: list[dict[str, Any]] = []
    model = ScriptedModel([REFUND])
    agent_for = factory(model, [refund_tool(runs)])
    [question] = questions_in(agent_for("t-reject")("refund"))

    reply = {"action": "reject", "note": "over budget"}
    done = agent_for("t-reject")(
        interrupt_responses({"question_id": question.question_id, "answer": reply})
    )
    assert done.stop_reason == "end_turn"
    assert runs == []
    assert json.loads(model.tool_results[-1]["text"]) == reply
    assert "over budget" in str(done)


def test_approve_with_edited_args_runs_with_them(factory: Factory) -> None:
    runs: list[dict[str, Any]] = []
    model = ScriptedModel([REFUND])
    agent_for = factory(model, [refund_tool(runs)])
    [question] = questions_in(agent_for("t-edit")("refund"))

    agent_for("t-edit")(
        interrupt_responses(
            {
                "question_id": question.question_id,
                "answer": {"action": "approve", "args": {"amount": 100}},
            }
        )
    )
    assert runs == [{"order_id": "order-4471", "amount": 100}]
    assert model.tool_results[-1]["text"] == "refunded 100 on order-4471"


def test_edited_args_naming_unknown_parameters_run_nothing(factory: Factory) -> None:
    runs: list[dict[str, Any]] = []
    model = ScriptedModel([REFUND])
    agent_for = factory(model, [refund_tool(runs)])
    [question] = questions_in(agent_for("t-bad-edit")("refund"))

    agent_for("t-bad-edit")(
        interrupt_responses(
            {
                "question_id": question.question_id,
                "answer": {"action": "approve", "args": {"amonut": 1}},
            }
        )
    )
    assert runs == []
    assert model.tool_results[-1]["status"] == "error"
    assert "amonut" in model.tool_results[-1]["text"]


def test_decision_parameter_receives_the_whole_answer(factory: Factory) -> None:
    seen: list[Any] = []

    @tool(context=True)
    @wait(decision="verdict")
    def deploy(service: str, tool_context: ToolContext, verdict: Any = None) -> str:
        """Deploy a service."""
        seen.append(verdict)
        return f"deployed {service}"

    assert set(deploy.tool_spec["inputSchema"]["json"]["properties"]) == {"service"}
    model = ScriptedModel([Call("deploy", {"service": "api"})])
    agent_for = factory(model, [deploy])
    result = agent_for("t-decision")("deploy")
    [question] = questions_in(result)
    assert question.question == {"function": "deploy", "args": {"service": "api"}}

    verdict = {"action": "reject", "why": "change freeze", "ticket": 7}
    agent_for("t-decision")(
        interrupt_responses({"question_id": question.question_id, "answer": verdict})
    )
    assert seen == [verdict]


def test_when_predicate_both_branches_and_a_raising_one(factory: Factory) -> None:
    runs: list[dict[str, Any]] = []
    small = refund_tool(runs, when=lambda amount, **_: amount > 1000)
    model = ScriptedModel([Call("issue_refund", {"order_id": "o-1", "amount": 10})])
    result = factory(model, [small])("t-small")("refund")
    assert result.stop_reason == "end_turn"
    assert runs == [{"order_id": "o-1", "amount": 10}]

    model = ScriptedModel([Call("issue_refund", {"order_id": "o-2", "amount": 5000})])
    result = factory(model, [small])("t-large")("refund")
    assert result.stop_reason == "interrupt"
    assert len(questions_in(result)) == 1

    def broken(**_: Any) -> bool:
        raise RuntimeError("predicate bug")

    model = ScriptedModel([Call("issue_refund", {"order_id": "o-3", "amount": 10})])
    result = factory(model, [refund_tool(runs, when=broken)])("t-broken")("refund")
    assert result.stop_reason == "interrupt"
    assert runs == [{"order_id": "o-1", "amount": 10}]


def test_async_mode_returns_pending_and_publishes_once(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    runs: list[dict[str, Any]] = []
    clock = lambda: NOW  # noqa: E731
    model = ScriptedModel([REFUND])
    agent_for = factory(
        model,
        [refund_tool(runs, WaitPolicy(timeout="PT1H"), mode="async", announce=inbox, clock=clock)],
    )
    result = agent_for("order-4471")("refund")

    assert result.stop_reason == "end_turn"
    assert runs == []
    expected = derive_question_id("order-4471", "issue_refund", REFUND.input)
    assert json.loads(model.tool_results[-1]["text"]) == {
        "status": "pending_approval",
        "question_id": expected,
        "function": "issue_refund",
    }
    [envelope] = inbox.envelopes
    assert envelope.question_id == expected
    assert envelope.thread_id == "order-4471"
    assert envelope.expires_at == "2026-09-11T10:00:00Z"
    assert envelope.source is not None
    assert envelope.source.function == "issue_refund"

    # The same start message again: the model calls the tool again, the id is the same.
    agent_for("order-4471")("refund")
    assert [e.question_id for e in inbox.envelopes] == [expected, expected]
    assert runs == []


def test_async_mode_needs_announcers() -> None:
    with pytest.raises(ValueError, match="announce"):
        refund_tool([], mode="async")


def test_bare_interrupt_is_published_without_invented_actions(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    answers: list[Any] = []

    @tool(context=True)
    def delete_file(path: str, tool_context: ToolContext) -> str:
        """Delete a file (unaware of agent-wait)."""
        answers.append(tool_context.interrupt("approve-delete", reason={"path": path}))
        return f"deleted {path}"

    model = ScriptedModel([Call("delete_file", {"path": "/tmp/x"})])
    agent_for = factory(model, [delete_file])
    result = agent_for("t-bare")("delete")
    report = publish_interrupts(result, "t-bare", inbox)
    [envelope] = report.envelopes
    assert envelope.question == {"name": "approve-delete", "reason": {"path": "/tmp/x"}}
    assert envelope.source is None
    assert envelope.allowed_actions == []
    assert "answer_schema" not in envelope.to_dict()
    assert envelope.expires_at is None
    assert envelope.default is None
    assert envelope.tags == {}

    agent_for("t-bare")(interrupt_responses({"question_id": envelope.question_id, "answer": "yes"}))
    assert answers == ["yes"]


def test_two_calls_of_one_tool_asking_the_same_question_are_told_apart(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    answers: list[Any] = []

    @tool(context=True)
    def proceed(step: str, tool_context: ToolContext) -> str:
        """Ask whether to go on (unaware of agent-wait)."""
        answers.append((step, tool_context.interrupt("continue?")))
        return "ok"

    model = ScriptedModel([Call("proceed", {"step": "a"}), Call("proceed", {"step": "b"})])
    agent_for = factory(model, [proceed])
    report = publish_interrupts(agent_for("t-same")("go"), "t-same", inbox, strict=True)

    first, second = report.envelopes
    assert first.question == second.question == {"name": "continue?", "reason": None}
    assert first.source is None
    assert [json.loads(e.to_json())["context"] for e in report.envelopes] == [
        {"tool": "proceed", "tool_call_id": "call_1_0"},
        {"tool": "proceed", "tool_call_id": "call_1_1"},
    ]
    agent_for("t-same")(
        interrupt_responses(
            {"question_id": first.question_id, "answer": "first"},
            {"question_id": second.question_id, "answer": "second"},
        )
    )
    # Each answer reached the call its envelope's context named.
    assert sorted(answers) == [("a", "first"), ("b", "second")]


def test_hook_interrupt_is_published_as_a_bare_question(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    tables = Tables()
    model = ScriptedModel([Call("drop_table", {"table": "orders"})])
    agent = Agent(model=model, tools=[tables.tool], hooks=[TextGuard()], callback_handler=None)
    [envelope] = publish_interrupts(agent("drop"), agent.session_id, inbox).envelopes
    assert envelope.question == {"name": "guard", "reason": {"table": "orders"}}
    assert envelope.source is None
    assert envelope.allowed_actions == []  # the hook takes "ok"; nothing says so, none invented
    # The hook's interrupt is for one tool call: that call is the context.
    assert envelope.context == CallContext(tool="drop_table", tool_call_id="call_1_0")
    agent(interrupt_responses({"question_id": envelope.question_id, "answer": "ok"}))
    assert tables.runs == ["orders"]


async def test_async_tools_with_invoke_async(factory: Factory, inbox: MemoryAnnounce) -> None:
    runs: list[int] = []

    @tool(context=True)
    @wait(POLICY)
    async def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return f"refunded {amount}"

    model = ScriptedModel([REFUND])
    agent_for = factory(model, [issue_refund])
    result = await agent_for("t-async").invoke_async("refund")
    report = await apublish_interrupts(result, "t-async", inbox, clock=lambda: NOW)
    [envelope] = report.envelopes
    assert envelope.expires_at == "2026-09-14T09:00:00Z"
    assert runs == []
    done = await agent_for("t-async").invoke_async(
        answer(envelope.reply_with, {"action": "approve"})
    )
    assert done.stop_reason == "end_turn"
    assert runs == [41000]
    assert model.tool_results[-1]["text"] == "refunded 41000"


async def test_async_tool_in_async_mode_publishes_with_apublish(
    factory: Factory, inbox: MemoryAnnounce
) -> None:
    runs: list[int] = []

    @tool(context=True)
    @wait(mode="async", announce=inbox)
    async def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        runs.append(amount)
        return "refunded"

    model = ScriptedModel([REFUND])
    result = await factory(model, [issue_refund])("t-async-mode").invoke_async("refund")
    assert result.stop_reason == "end_turn"
    assert runs == []
    assert inbox.question_ids == [derive_question_id("t-async-mode", "issue_refund", REFUND.input)]


def test_expires_at_is_measured_from_each_publish(factory: Factory, inbox: MemoryAnnounce) -> None:
    model = ScriptedModel([REFUND])
    result = factory(model, [refund_tool([], WaitPolicy(timeout="PT15M"))])("t-clock")("refund")
    first = publish_interrupts(result, "t-clock", inbox, clock=lambda: NOW)
    later = publish_interrupts(result, "t-clock", inbox, clock=lambda: NOW + timedelta(hours=1))
    assert first.envelopes[0].expires_at == "2026-09-11T09:15:00Z"
    assert later.envelopes[0].expires_at == "2026-09-11T10:15:00Z"
    assert first.question_ids == later.question_ids
    assert first.envelopes[0].event_id != later.envelopes[0].event_id


def test_wait_above_tool_is_refused() -> None:
    @tool(context=True)
    def issue_refund(order_id: str, tool_context: ToolContext) -> str:
        """Refund."""
        return "refunded"

    with pytest.raises(TypeError, match="below @tool"):
        wait(issue_refund)
    with pytest.raises(TypeError, match="below @tool"):
        wait(POLICY)(issue_refund)


def test_wait_without_tool_context_is_refused() -> None:
    def issue_refund(order_id: str) -> str:
        return "refunded"

    with pytest.raises(TypeError, match="ToolContext"):
        wait(issue_refund)


def test_decision_parameter_without_default_is_refused() -> None:
    def deploy(service: str, tool_context: ToolContext, verdict: Any) -> str:
        return "deployed"

    with pytest.raises(TypeError, match=r"decision='verdict'.*default"):
        wait(decision="verdict")(deploy)


def test_questions_in_a_finished_result_and_a_wrong_type(factory: Factory) -> None:
    model = ScriptedModel("hello")
    result = factory(model, [])("t-text")("hi")
    assert result.stop_reason == "end_turn"
    assert questions_in(result) == []
    with pytest.raises(TypeError, match="AgentResult"):
        questions_in({"__interrupt__": []})  # type: ignore[arg-type]


def test_interrupt_responses_shape_and_errors() -> None:
    assert interrupt_responses(
        {"thread_id": "t", "question_id": "q1", "answer": {"action": "approve"}},
        {"question_id": "q2", "answer": False},
    ) == [
        {"interruptResponse": {"interruptId": "q1", "response": {"action": "approve"}}},
        {"interruptResponse": {"interruptId": "q2", "response": False}},
    ]
    with pytest.raises(ValueError, match=r"answers\[0\]\.question_id"):
        interrupt_responses({"answer": 1})
    with pytest.raises(ValueError, match=r"answers\[1\]\.answer: missing"):
        interrupt_responses({"question_id": "q", "answer": 1}, {"question_id": "q2"})
    with pytest.raises(ValueError, match="null"):
        interrupt_responses({"question_id": "q", "answer": None})
