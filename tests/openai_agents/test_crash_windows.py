"""A worker that dies inside an approved OpenAI Agents SDK tool: the body still runs at most once.

The SDK runs an approved call when the run resumes, and handle_message stores the run only when
it returns: a worker killed inside the tool (or in the model's turn after it) leaves the thread
parked on the question it was answering, so the redelivered answer resumes the whole run again,
tool included. The execution ledger is what keeps the approved body to one run.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, FunctionTool, function_tool

from agent_wait.core import MemoryAnnounce, Outcome, SqliteLedger, WaitEnvelope, WaitPolicy
from agent_wait.openai_agents import (
    InMemoryRuns,
    RunStore,
    SqliteRuns,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
    wait,
)
from tests.openai_agents.scripted import ScriptedModel
from tests.reliability.killed import die, killed_worker

THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}
REFUND = {"order_id": "order-4471", "amount": 41000}
APPROVE = {"action": "approve"}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


@dataclass
class Refunds:
    """An agent whose model calls ``issue_refund`` once, then answers ``done``.

    ``kill_in`` holds ``body`` (the refund happened, the body did not return) or
    ``body-sigkill`` (the process dies there).
    """

    agent: Agent[Any] = field(init=False)
    model: ScriptedModel = field(init=False)
    effects: list[str] = field(default_factory=list[str])
    kill_in: set[str] = field(default_factory=set[str])
    effects_file: Path | None = None

    def effect(self, line: str) -> None:
        self.effects.append(line)
        if self.effects_file is not None:
            with self.effects_file.open("a") as out:
                out.write(f"{line}\n")
        if "body-sigkill" in self.kill_in:
            die()
        if "body" in self.kill_in:
            self.kill_in.discard("body")
            raise WorkerKilled("body")


def refunds(
    ledger: SqliteLedger,
    kind: str = "wait",
    *,
    once: bool = True,
    effects_file: Path | None = None,
) -> Refunds:
    """``kind``: ``wait`` (sync), ``wait-async``, or ``needs_approval`` (the SDK's own)."""
    made = Refunds(effects_file=effects_file)
    policy = WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"})
    tool: FunctionTool
    if kind == "wait-async":

        @wait(policy, once=once, ledger=ledger)
        async def issue_refund(order_id: str, amount: int) -> str:
            made.effect(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        tool = issue_refund
    elif kind == "wait":

        @wait(policy, once=once, ledger=ledger)
        def issue_refund(order_id: str, amount: int) -> str:  # pyright: ignore[reportRedeclaration]
            made.effect(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        tool = issue_refund
    else:

        @function_tool(needs_approval=True)
        def issue_refund(order_id: str, amount: int) -> str:  # pyright: ignore[reportRedeclaration]
            made.effect(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        tool = issue_refund
    made.model = ScriptedModel("issue_refund", [REFUND])
    made.agent = Agent("refunds", model=made.model, tools=[tool])
    return made


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "executions.sqlite3") as made:
        yield made


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


def tool_outputs(app: Refunds) -> list[str]:
    """What the model read from the tool on its last turn."""
    return [i["output"] for i in app.model.inputs[-1] if i.get("type") == "function_call_output"]


def killed_in_the_body(app: Refunds, inbox: MemoryAnnounce, runs: RunStore) -> WaitEnvelope:
    handle_message(app.agent, START, inbox, runs=runs)
    [approval] = inbox.envelopes
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert app.effects == ["refund order-4471 41000"]
    return approval


@pytest.mark.parametrize("kind", ["wait", "wait-async", "needs_approval"])
def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger, kind: str
) -> None:
    # The SDK's own needs_approval tool keeps its record in the configured ledger (in the
    # test's own agent-wait home).
    app, inbox, runs = refunds(ledger, kind), MemoryAnnounce(), InMemoryRuns()
    approval = killed_in_the_body(app, inbox, runs)

    again = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 41000"], "the redelivery ran the body again"
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["args"] == {"function": "issue_refund", "args": REFUND, "attempt": 0}
    assert "issue_refund(order_id='order-4471', amount=41000)" in doubt.question["text"]
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.context is not None
    assert (doubt.context.tool, doubt.context.tool_call_id) == ("issue_refund", "call-0")
    if kind != "needs_approval":
        assert doubt.tags == {"approver_group": "finance"}

    late = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert late.outcome is Outcome.DUPLICATE, late.detail
    refused = handle_message(app.agent, reply(doubt, APPROVE), inbox, runs=runs)
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail

    done = handle_message(app.agent, reply(doubt, {"action": "no"}), inbox, runs=runs)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result.final_output == "done"
    assert tool_outputs(app) == ["refunded 41000"]
    assert app.effects == ["refund order-4471 41000"] * 2
    dup = handle_message(app.agent, reply(doubt, {"action": "no"}), inbox, runs=runs)
    assert dup.outcome is Outcome.DUPLICATE
    assert app.effects == ["refund order-4471 41000"] * 2


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    ledger: SqliteLedger,
) -> None:
    app, inbox, runs = refunds(ledger), MemoryAnnounce(), InMemoryRuns()
    approval = killed_in_the_body(app, inbox, runs)
    [doubt] = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs).report.envelopes
    answer = {"action": "yes", "result": "refunded by hand"}
    done = handle_message(app.agent, reply(doubt, answer), inbox, runs=runs)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result.final_output == "done"
    assert tool_outputs(app) == ["refunded by hand"]
    assert app.effects == ["refund order-4471 41000"]


def test_a_crash_in_the_run_after_no_asks_again_and_never_runs_twice_unasked(
    ledger: SqliteLedger,
) -> None:
    app, inbox, runs = refunds(ledger), MemoryAnnounce(), InMemoryRuns()
    approval = killed_in_the_body(app, inbox, runs)
    [first] = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs).report.envelopes
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(first, {"action": "no"}), inbox, runs=runs)
    assert len(app.effects) == 2

    again = handle_message(app.agent, reply(first, {"action": "no"}), inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    [second] = again.report.envelopes
    assert second.question["args"]["attempt"] == 1
    assert second.question_id not in (first.question_id, approval.question_id)
    assert len(app.effects) == 2, "a run was started without a person's answer"
    late = handle_message(app.agent, reply(first, {"action": "no"}), inbox, runs=runs)
    assert late.outcome is Outcome.DUPLICATE

    done = handle_message(app.agent, reply(second, {"action": "yes"}), inbox, runs=runs)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result.final_output == "done"
    assert len(app.effects) == 2


def test_a_body_that_returned_before_the_crash_is_not_run_again(ledger: SqliteLedger) -> None:
    app, inbox, runs = refunds(ledger), MemoryAnnounce(), InMemoryRuns()
    handle_message(app.agent, START, inbox, runs=runs)
    [approval] = inbox.envelopes
    # The worker dies in the model's turn after the tool returned: nothing of the run is stored.
    original = app.model.get_response

    async def dies(*args: Any, **kwargs: Any) -> Any:
        app.model.get_response = original  # type: ignore[method-assign]
        raise WorkerKilled("report")

    app.model.get_response = dies  # type: ignore[method-assign]
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert app.effects == ["refund order-4471 41000"]

    again = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result.final_output == "done"
    assert tool_outputs(app) == ["refunded 41000"]
    assert app.effects == ["refund order-4471 41000"]


def test_async_and_streamed_a_crash_inside_the_body_asks_on_redelivery(
    ledger: SqliteLedger,
) -> None:
    async def scenario() -> None:
        app, inbox, runs = refunds(ledger, "wait-async"), MemoryAnnounce(), InMemoryRuns()
        await ahandle_message(app.agent, START, inbox, runs=runs)
        [approval] = inbox.envelopes
        app.kill_in.add("body")
        with pytest.raises(WorkerKilled):
            async for _ in astream_message(app.agent, reply(approval, APPROVE), inbox, runs=runs):
                pass
        streamed = astream_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
        async for _ in streamed:
            pass
        again = streamed.handled
        assert again.outcome is Outcome.RESUMED, again.detail
        [doubt] = again.report.envelopes
        assert doubt.question["function"] == "did_it_happen"
        assert app.effects == ["refund order-4471 41000"]
        done = await ahandle_message(app.agent, reply(doubt, {"action": "no"}), inbox, runs=runs)
        assert done.outcome is Outcome.RESUMED, done.detail
        assert app.effects == ["refund order-4471 41000"] * 2

    asyncio.run(scenario())


def test_sync_streamed_a_crash_inside_the_body_asks_on_redelivery(ledger: SqliteLedger) -> None:
    app, inbox, runs = refunds(ledger), MemoryAnnounce(), InMemoryRuns()
    approval = killed_in_the_body(app, inbox, runs)
    redelivered = stream_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    list(redelivered)
    [doubt] = redelivered.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    # Killed again, inside the body a streamed resume runs: the thread stays parked on the
    # in-doubt question, and its redelivery asks about the new attempt.
    app.kill_in.add("body")
    no = stream_message(app.agent, reply(doubt, {"action": "no"}), inbox, runs=runs)
    with pytest.raises(WorkerKilled):
        list(no)
    assert app.effects == ["refund order-4471 41000"] * 2
    streamed = stream_message(app.agent, reply(doubt, {"action": "no"}), inbox, runs=runs)
    list(streamed)
    assert streamed.handled.outcome is Outcome.RESUMED, streamed.handled.detail
    [asked_again] = streamed.handled.report.envelopes
    assert asked_again.question["function"] == "did_it_happen"
    assert app.effects == ["refund order-4471 41000"] * 2


def test_once_false_keeps_the_sdks_semantics(ledger: SqliteLedger) -> None:
    app, inbox, runs = refunds(ledger, once=False), MemoryAnnounce(), InMemoryRuns()
    approval = killed_in_the_body(app, inbox, runs)
    again = handle_message(app.agent, reply(approval, APPROVE), inbox, runs=runs)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result.final_output == "done"
    assert app.effects == ["refund order-4471 41000"] * 2


def app_in(root: Path) -> Refunds:
    """The app a worker process and the test share: its ledger and effects file."""
    return refunds(SqliteLedger(root / "executions.sqlite3"), effects_file=root / "effects.txt")


def test_a_worker_sigkilled_inside_the_body_runs_it_once(tmp_path: Path) -> None:
    effects = tmp_path / "effects.txt"
    app, inbox = app_in(tmp_path), MemoryAnnounce()
    with SqliteRuns(tmp_path / "runs.sqlite3") as runs:
        handle_message(app.agent, START, inbox, runs=runs)
        [approval] = inbox.envelopes
        code = (
            "import json, sys\n"
            "from pathlib import Path\n"
            "from agent_wait.core import MemoryAnnounce\n"
            "from agent_wait.openai_agents import SqliteRuns, handle_message\n"
            "from tests.openai_agents.test_crash_windows import app_in\n"
            "root = Path(sys.argv[1])\n"
            "app = app_in(root)\n"
            "app.kill_in.add('body-sigkill')\n"
            "runs = SqliteRuns(root / 'runs.sqlite3')\n"
            "handle_message(app.agent, json.loads(sys.argv[2]), MemoryAnnounce(), runs=runs)\n"
        )
        killed_worker(code, str(tmp_path), json.dumps(reply(approval, APPROVE)))
        assert effects.read_text() == "refund order-4471 41000\n"

        fresh = app_in(tmp_path)
        again = handle_message(fresh.agent, reply(approval, APPROVE), inbox, runs=runs)
        assert again.outcome is Outcome.RESUMED, again.detail
        [doubt] = again.report.envelopes
        assert doubt.question["function"] == "did_it_happen"
        done = handle_message(fresh.agent, reply(doubt, {"action": "yes"}), inbox, runs=runs)
        assert done.outcome is Outcome.RESUMED, done.detail
        assert done.result.final_output == "done"
        assert effects.read_text() == "refund order-4471 41000\n"
