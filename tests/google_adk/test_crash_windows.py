"""A worker that dies inside an approved @wait ADK tool: the body still runs at most once.

ADK appends the answer to the session before it runs the confirmed tool and the tool's response
after it returns, so a worker killed inside the body leaves a session that ends on the answer:
the redelivered answer finds its question answered and the run unfinished, and the host sends
the answer again. ADK then runs the tool again, and the execution ledger is what keeps the
approved body to one run: it runs nothing and asks a person whether the call happened.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, DatabaseSessionService
from google.adk.tools import ToolContext

from agent_wait.core import (
    Handled,
    MemoryAnnounce,
    Outcome,
    SqliteLedger,
    WaitEnvelope,
    WaitPolicy,
    derive_question_id,
)
from agent_wait.google_adk import ahandle_message, handle_message, wait
from agent_wait.google_adk._adapter import requests_in
from tests.google_adk.conftest import runner_for
from tests.reliability.killed import die, killed_worker

THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}
CALL = [("issue_refund", {"order_id": "order-4471", "amount": 41000})]
APPROVE = {"action": "approve"}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


@dataclass
class Refunds:
    """A runner whose model calls ``issue_refund`` once; ``kill_in`` holds ``body`` (the refund
    happened, the body did not return) or ``body-sigkill`` (the process dies there)."""

    runner: Runner = field(init=False)
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
    sessions: BaseSessionService | None = None,
    *,
    asynchronous: bool = False,
    once: bool = True,
    effects_file: Path | None = None,
    resumable: bool = False,
) -> Refunds:
    made = Refunds(effects_file=effects_file)
    policy = WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"})
    if asynchronous:

        @wait(policy, once=once, ledger=ledger)
        async def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            made.effect(f"refund {order_id} {amount}")
            return f"refunded {amount}"

        made.runner = runner_for([issue_refund], CALL, sessions, resumable=resumable)
        return made

    @wait(policy, once=once, ledger=ledger)
    def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
        """Refund an order."""
        made.effect(f"refund {order_id} {amount}")
        return f"refunded {amount}"

    made.runner = runner_for([issue_refund], CALL, sessions, resumable=resumable)
    return made


def tool_responses(events: Any) -> list[Any]:
    """What ``issue_refund`` answered the model in ``events``."""
    return [
        part.function_response.response
        for event in events
        for part in (event.content.parts if event.content else None) or ()
        if part.function_response is not None and part.function_response.name == "issue_refund"
    ]


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "executions.sqlite3") as made:
        yield made


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


def killed_in_the_body(app: Refunds, inbox: MemoryAnnounce, where: str = "body") -> WaitEnvelope:
    """Start, approve, and kill the worker ``where`` (a ``kill_in`` place raising
    :class:`WorkerKilled`, after the refund); the approval's envelope."""
    handle_message(app.runner, START, inbox)
    [approval] = inbox.envelopes
    app.kill_in.add(where)
    with pytest.raises(WorkerKilled):
        handle_message(app.runner, reply(approval, APPROVE), inbox)
    assert app.effects == ["refund order-4471 41000"]
    return approval


def asked_whether_it_happened(
    app: Refunds, inbox: MemoryAnnounce, approval: WaitEnvelope
) -> WaitEnvelope:
    """From a crash inside the approved body: the redelivery asks, late copies run nothing."""
    again = handle_message(app.runner, reply(approval, APPROVE), inbox)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert app.effects == ["refund order-4471 41000"], "the redelivery ran the body again"
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["args"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
        "attempt": 0,
    }
    assert "issue_refund(order_id='order-4471', amount=41000)" in doubt.question["text"]
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.question_id != approval.question_id

    # A late copy of the approval runs nothing: the thread waits on the in-doubt question.
    late = handle_message(app.runner, reply(approval, APPROVE), inbox)
    assert late.outcome is Outcome.DUPLICATE, late.detail
    refused = handle_message(app.runner, reply(doubt, APPROVE), inbox)
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail
    return doubt


def no_runs_it_once(app: Refunds, inbox: MemoryAnnounce, doubt: WaitEnvelope) -> Handled:
    """Answer ``doubt`` with no: the body runs once more, and a duplicate runs nothing."""
    done = handle_message(app.runner, reply(doubt, {"action": "no"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert not done.parked
    assert app.effects == ["refund order-4471 41000"] * 2
    dup = handle_message(app.runner, reply(doubt, {"action": "no"}), inbox)
    assert dup.outcome is Outcome.DUPLICATE
    assert app.effects == ["refund order-4471 41000"] * 2
    return done


@pytest.mark.parametrize("resumable", [False, True], ids=["app", "resumable-app"])
def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger, resumable: bool
) -> None:
    app, inbox = refunds(ledger, resumable=resumable), MemoryAnnounce()
    doubt = asked_whether_it_happened(app, inbox, killed_in_the_body(app, inbox))
    assert doubt.tags == {"approver_group": "finance"}
    no_runs_it_once(app, inbox, doubt)
    # A resumable app's stopped invocation is resumed by its id (ADK goes on from its own
    # events); another's answer is sent again.
    assert answers_sent(app.runner) == (1 if resumable else 2)


def answers_sent(runner: Runner) -> int:
    """How many user messages answered the first confirmation of the thread."""
    session = asyncio.run(
        runner.session_service.get_session(
            app_name=runner.app_name, user_id="agent-wait", session_id=THREAD
        )
    )
    assert session is not None
    [first, *_] = requests_in(session.events)
    return sum(
        1
        for event in session.events
        if event.author == "user" and any(r.id == first for r in event.get_function_responses())
    )


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    ledger: SqliteLedger,
) -> None:
    app, inbox = refunds(ledger), MemoryAnnounce()
    approval = killed_in_the_body(app, inbox)
    [doubt] = handle_message(app.runner, reply(approval, APPROVE), inbox).report.envelopes

    done = handle_message(app.runner, reply(doubt, {"action": "yes", "result": "by hand"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert not done.parked
    assert app.effects == ["refund order-4471 41000"]
    assert tool_responses(done.result) == [{"result": "by hand"}]
    # The record is done: a run of the same call (ADK re-running the tool) returns it.
    key = derive_question_id(THREAD, "issue_refund", {"function_call_id": "call-0"})
    found = ledger.claim(key, 0, "another")
    assert found is not None
    assert found.done
    assert found.result == "by hand"


def test_a_crash_in_the_run_after_no_asks_again_and_never_runs_twice_unasked(
    ledger: SqliteLedger,
) -> None:
    app, inbox = refunds(ledger), MemoryAnnounce()
    a_crash_after_no_asks_again(app, inbox, killed_in_the_body(app, inbox))


def a_crash_after_no_asks_again(
    app: Refunds, inbox: MemoryAnnounce, approval: WaitEnvelope
) -> None:
    """From a crash inside the approved body: a crash after ``no`` asks again, runs nothing."""
    [first] = handle_message(app.runner, reply(approval, APPROVE), inbox).report.envelopes

    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.runner, reply(first, {"action": "no"}), inbox)
    assert len(app.effects) == 2

    again = handle_message(app.runner, reply(first, {"action": "no"}), inbox)
    assert again.outcome is Outcome.CONTINUED, again.detail
    [second] = again.report.envelopes
    assert second.question["args"]["attempt"] == 1
    assert second.question_id not in (first.question_id, approval.question_id)
    assert len(app.effects) == 2, "a run was started without a person's answer"

    done = handle_message(app.runner, reply(second, {"action": "yes"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert not done.parked
    assert len(app.effects) == 2


def test_async_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger,
) -> None:
    async def scenario() -> None:
        app, inbox = refunds(ledger, asynchronous=True), MemoryAnnounce()
        await ahandle_message(app.runner, START, inbox)
        [approval] = inbox.envelopes
        app.kill_in.add("body")
        with pytest.raises(WorkerKilled):
            await ahandle_message(app.runner, reply(approval, APPROVE), inbox)
        again = await ahandle_message(app.runner, reply(approval, APPROVE), inbox)
        assert again.outcome is Outcome.CONTINUED, again.detail
        [doubt] = again.report.envelopes
        assert doubt.question["function"] == "did_it_happen"
        assert app.effects == ["refund order-4471 41000"]
        done = await ahandle_message(app.runner, reply(doubt, {"action": "no"}), inbox)
        assert done.outcome is Outcome.RESUMED, done.detail
        assert app.effects == ["refund order-4471 41000"] * 2

    asyncio.run(scenario())


def test_once_false_keeps_the_frameworks_semantics(ledger: SqliteLedger) -> None:
    app, inbox = refunds(ledger, once=False), MemoryAnnounce()
    approval = killed_in_the_body(app, inbox)
    again = handle_message(app.runner, reply(approval, APPROVE), inbox)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert not again.parked
    assert app.effects == ["refund order-4471 41000"] * 2


def app_in(root: Path) -> Refunds:
    """The app a worker process and the test share: its session database, ledger and effects."""
    sessions = DatabaseSessionService(f"sqlite+aiosqlite:///{root / 'sessions.sqlite3'}")
    return refunds(
        SqliteLedger(root / "executions.sqlite3"), sessions, effects_file=root / "effects.txt"
    )


def redelivered_after_a_sigkill(
    app_in: Callable[..., Refunds], root: Path, where: str, *args: str
) -> tuple[Refunds, MemoryAnnounce, Handled]:
    """Start ``app_in(root, *args)``, approve in a worker SIGKILLed at ``where`` (after the
    refund), and redeliver the approval to a fresh app: that app, its inbox, the outcome."""
    app, inbox = app_in(root, *args), MemoryAnnounce()
    handle_message(app.runner, START, inbox)
    [approval] = inbox.envelopes
    code = (
        "import importlib, json, sys\n"
        "from pathlib import Path\n"
        "from agent_wait.core import MemoryAnnounce\n"
        "from agent_wait.google_adk import handle_message\n"
        "module, name, root, where, message, *args = sys.argv[1:]\n"
        "app = getattr(importlib.import_module(module), name)(Path(root), *args)\n"
        "app.kill_in.add(where)\n"
        "handle_message(app.runner, json.loads(message), MemoryAnnounce())\n"
    )
    message = json.dumps(reply(approval, APPROVE))
    killed_worker(code, app_in.__module__, app_in.__name__, str(root), where, message, *args)
    assert (root / "effects.txt").read_text() == "refund order-4471 41000\n"
    fresh = app_in(root, *args)
    again = handle_message(fresh.runner, reply(approval, APPROVE), inbox)
    assert again.outcome is Outcome.CONTINUED, again.detail
    return fresh, inbox, again


def test_a_worker_sigkilled_inside_the_body_runs_it_once(tmp_path: Path) -> None:
    fresh, inbox, again = redelivered_after_a_sigkill(app_in, tmp_path, "body-sigkill")
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    done = handle_message(fresh.runner, reply(doubt, {"action": "yes"}), inbox)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert not done.parked
    assert (tmp_path / "effects.txt").read_text() == "refund order-4471 41000\n"
