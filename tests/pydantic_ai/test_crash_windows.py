"""A worker that dies inside or after an approved @wait tool: the body still runs at most once.

Pydantic AI saves nothing of a run until it ends, and handle_message stores the history only
then: a worker killed anywhere in a resume leaves the thread parked on the question it was
answering, so the redelivered answer resumes the whole run again, tool included. The
execution ledger is what keeps the approved body to one run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, ApprovalRequired, DeferredToolRequests, RunContext
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import (
    MemoryAnnounce,
    Outcome,
    SqliteAnnounce,
    SqliteLedger,
    WaitPolicy,
    configured_ledger,
)
from agent_wait.pydantic_ai import (
    InMemoryHistory,
    SqliteHistory,
    ahandle_message,
    astream_message,
    handle_message,
    stream_message,
    wait,
)
from tests.redrive import redriven_after_a_lost_answer
from tests.reliability.killed import die, killed_worker

THREAD = "order-4471"
START_MESSAGE = {"thread_id": THREAD, "input": "refund order-4471"}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


@dataclass
class Refunds:
    """An agent whose model calls ``issue_refund`` once, then reports what the tool returned.

    ``kill_in`` names where the worker dies the next time it gets there: ``prompt`` (the model's
    first turn), ``body`` (the refund happened, the body did not return), ``report`` (the
    model's turn after the tool returned); ``<where>-sigkill`` SIGKILLs the process there.
    With ``effects_file``, each refund is also appended to that file (a worker process's
    effects, seen by the test).
    """

    agent: Agent[None, Any] = field(init=False)
    effects: list[str] = field(default_factory=list[str])
    kill_in: set[str] = field(default_factory=set[str])
    effects_file: Path | None = None

    def die_if_asked(self, where: str) -> None:
        if f"{where}-sigkill" in self.kill_in:
            die()
        if where in self.kill_in:
            self.kill_in.discard(where)
            raise WorkerKilled(where)

    def effect(self, line: str) -> None:
        self.effects.append(line)
        if self.effects_file is not None:
            with self.effects_file.open("a") as out:
                out.write(f"{line}\n")

    def respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            self.die_if_asked("prompt")
            args = {"order_id": "order-4471", "amount": 41000}
            return ModelResponse(parts=[ToolCallPart("issue_refund", args, tool_call_id="call-1")])
        self.die_if_asked("report")
        returned = [p.content for p in last.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(json.dumps(returned))])


def refunds(
    ledger: SqliteLedger,
    *,
    asynchronous: bool = False,
    once: bool = True,
    effects_file: Path | None = None,
) -> Refunds:
    made = Refunds(effects_file=effects_file)
    agent = Agent(FunctionModel(made.respond), output_type=[str, DeferredToolRequests])
    policy = WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"})

    def refund(order_id: str, amount: int) -> str:
        made.effect(f"refund {order_id} {amount}")  # the effect happens first...
        made.die_if_asked("body")  # ...then the worker dies before the body returns
        return f"refunded {amount}"

    if asynchronous:

        @agent.tool
        @wait(policy, once=once, ledger=ledger)
        async def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
            return refund(order_id, amount)

    else:

        @agent.tool
        @wait(policy, once=once, ledger=ledger)
        def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:
            return refund(order_id, amount)

    made.agent = agent
    return made


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[SqliteLedger]:
    with SqliteLedger(tmp_path / "executions.sqlite3") as made:
        yield made


def reply(question_id: str, answer: Any) -> dict[str, Any]:
    return {"thread_id": THREAD, "question_id": question_id, "answer": answer}


APPROVE = {"action": "approve"}


def test_a_body_that_returned_before_the_crash_is_not_run_again(ledger: SqliteLedger) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("report")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert app.effects == ["refund order-4471 41000"]

    # Nothing of the killed run was saved: the answer's redelivery resumes the whole run.
    again = handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result is not None
    assert json.loads(again.result.output) == ["refunded 41000"]  # the recorded result
    assert app.effects == ["refund order-4471 41000"]


def test_a_start_message_redelivered_after_a_crash_runs_from_the_unchanged_history(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    app.kill_in.add("prompt")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, START_MESSAGE, history=history)
    # Nothing was saved (no half-run to continue): the redelivery runs the prompt once.
    assert history.load(THREAD) == []

    again = handle_message(app.agent, START_MESSAGE, history=history)
    assert again.outcome is Outcome.STARTED, again.detail
    assert again.question_ids == ["call-1"]
    [prompt] = [
        part
        for message in history.load(THREAD)
        for part in message.parts
        if part.part_kind == "user-prompt"
    ]
    assert prompt.content == "refund order-4471"


def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger,
) -> None:
    app, history, announce = refunds(ledger), InMemoryHistory(), MemoryAnnounce()
    [question_id] = handle_message(app.agent, START_MESSAGE, announce, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert app.effects == ["refund order-4471 41000"]

    # The redelivery runs nothing: whether the refund happened is a person's to say.
    again = handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 41000"]
    [doubt] = again.report.envelopes
    # The same tool call is deferred again, under a question id of its own.
    assert doubt.question_id != question_id
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["text"].startswith(
        "did `issue_refund(order_id='order-4471', amount=41000)` happen?"
    )
    assert doubt.question["args"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
        "attempt": 0,
    }
    assert doubt.allowed_actions == ["yes", "no"]
    assert doubt.tags == {"approver_group": "finance"}
    assert doubt.context is not None
    assert doubt.context.tool_call_id == "call-1"
    # Another copy of the approval asks nothing new and runs nothing.
    duplicate = handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
    assert duplicate.outcome is Outcome.DUPLICATE, duplicate.detail
    # Neither yes nor no is refused before anything is saved; the question stays answerable.
    refused = handle_message(
        app.agent, reply(doubt.question_id, APPROVE), announce, history=history
    )
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail
    assert "'yes'" in (refused.detail or "")

    done = handle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), announce, history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 41000"]
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]
    late = handle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), announce, history=history
    )
    assert late.outcome is Outcome.DUPLICATE, late.detail
    assert len(app.effects) == 2


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    [doubt] = handle_message(
        app.agent, reply(question_id, APPROVE), history=history
    ).report.envelopes

    answered = {"action": "yes", "result": "refunded 41000 (confirmed by hand)"}
    done = handle_message(app.agent, reply(doubt.question_id, answered), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 41000 (confirmed by hand)"]
    assert app.effects == ["refund order-4471 41000"]


def test_a_crash_in_the_run_after_no_asks_again_and_never_runs_twice_unasked(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    [first] = handle_message(
        app.agent, reply(question_id, APPROVE), history=history
    ).report.envelopes
    app.kill_in.add("body")  # the run that "no" allows dies inside the body too
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(first.question_id, {"action": "no"}), history=history)
    assert len(app.effects) == 2

    again = handle_message(app.agent, reply(first.question_id, {"action": "no"}), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [second] = again.report.envelopes
    assert second.question["args"]["attempt"] == 1
    assert second.question_id not in (first.question_id, question_id)
    assert len(app.effects) == 2
    done = handle_message(app.agent, reply(second.question_id, {"action": "yes"}), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert len(app.effects) == 2


def test_once_false_keeps_the_framework_semantics(ledger: SqliteLedger) -> None:
    app, history = refunds(ledger, once=False), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)
    again = handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert len(app.effects) == 2
    assert ledger.records() == []


def test_a_streamed_resume_killed_inside_the_body_asks_on_redelivery(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        list(stream_message(app.agent, reply(question_id, APPROVE), history=history))

    run = stream_message(app.agent, reply(question_id, APPROVE), history=history)
    list(run)
    assert run.handled.outcome is Outcome.RESUMED, run.handled.detail
    [doubt] = run.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert app.effects == ["refund order-4471 41000"]


async def test_async_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger, asynchronous=True), InMemoryHistory()
    started = await ahandle_message(app.agent, START_MESSAGE, history=history)
    [question_id] = started.question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        await ahandle_message(app.agent, reply(question_id, APPROVE), history=history)

    again = await ahandle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question_id != question_id
    assert app.effects == ["refund order-4471 41000"]

    done = await ahandle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert app.effects == ["refund order-4471 41000", "refund order-4471 41000"]


def test_a_crash_inside_one_of_two_approved_bodies_asks_about_that_one_only(
    ledger: SqliteLedger,
) -> None:
    effects: list[str] = []
    kill_in = {"a"}

    def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if any(part.part_kind == "user-prompt" for part in last.parts):
            return ModelResponse(
                parts=[
                    ToolCallPart("refund", {"order_id": "b"}, tool_call_id="call-b"),
                    ToolCallPart("refund", {"order_id": "a"}, tool_call_id="call-a"),
                ]
            )
        returned = [p.content for p in last.parts if isinstance(p, ToolReturnPart)]
        return ModelResponse(parts=[TextPart(json.dumps(sorted(returned)))])

    agent = Agent(FunctionModel(respond), output_type=[str, DeferredToolRequests])

    # One at a time, in call order: "b" returns before the worker dies inside "a".
    @agent.tool(sequential=True)
    @wait(ledger=ledger)
    def refund(ctx: RunContext[None], order_id: str) -> str:
        effects.append(order_id)
        if order_id in kill_in:
            kill_in.discard(order_id)
            raise WorkerKilled(order_id)
        return f"refunded {order_id}"

    history = InMemoryHistory()
    first, second = handle_message(agent, START_MESSAGE, history=history).question_ids
    held = handle_message(agent, reply(first, APPROVE), history=history)
    assert held.outcome is Outcome.HELD, held.detail
    with pytest.raises(WorkerKilled):
        handle_message(agent, reply(second, APPROVE), history=history)
    assert effects == ["b", "a"]

    again = handle_message(agent, reply(second, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["args"]["args"] == {"order_id": "a"}
    assert effects == ["b", "a"]  # "b" returned its recorded result

    done = handle_message(agent, reply(doubt.question_id, {"action": "no"}), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded a", "refunded b"]
    assert effects == ["b", "a", "a"]


async def test_async_a_streamed_resume_killed_inside_the_body_asks_on_redelivery(
    ledger: SqliteLedger,
) -> None:
    app, history = refunds(ledger, asynchronous=True), InMemoryHistory()
    started = await ahandle_message(app.agent, START_MESSAGE, history=history)
    [question_id] = started.question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        async for _ in astream_message(app.agent, reply(question_id, APPROVE), history=history):
            pass

    run = astream_message(app.agent, reply(question_id, APPROVE), history=history)
    async for _ in run:
        pass
    assert run.handled.outcome is Outcome.RESUMED, run.handled.detail
    [doubt] = run.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert app.effects == ["refund order-4471 41000"]


def app_in(root: Path, kind: str) -> Refunds:
    """The ``kind`` of refund agent (``wait``, or a :func:`deferred_refunds` kind) over the files
    under ``root``: its effects, and for ``wait`` its ledger (a deferred tool's is the configured
    one, in the ``AGENT_WAIT_HOME`` a worker process inherits)."""
    effects_file = root / "effects.txt"
    if kind == "wait":
        return refunds(SqliteLedger(root / "executions.sqlite3"), effects_file=effects_file)
    return deferred_refunds(kind, effects_file=effects_file)


def in_worker(root: Path, kind: str, kill_in: str, message: dict[str, Any]) -> None:
    """Handle ``message`` in a worker process, on the files under ``root``, SIGKILLed at ``kill_in``."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from agent_wait.core import MemoryAnnounce\n"
        "from agent_wait.pydantic_ai import SqliteHistory, handle_message\n"
        "from tests.pydantic_ai.test_crash_windows import app_in\n"
        "root = Path(sys.argv[1])\n"
        "app = app_in(root, sys.argv[2])\n"
        "app.kill_in.add(sys.argv[3])\n"
        "history = SqliteHistory(root / 'history.sqlite3')\n"
        "handle_message(app.agent, json.loads(sys.argv[4]), MemoryAnnounce(), history=history)\n"
    )
    killed_worker(code, str(root), kind, kill_in, json.dumps(message))


@pytest.mark.parametrize("where", ["body", "report"])
@pytest.mark.parametrize("kind", ["wait", "requires_approval"])
def test_a_worker_sigkilled_in_the_resume_runs_the_body_once(
    tmp_path: Path, kind: str, where: str
) -> None:
    effects_file = tmp_path / "effects.txt"
    with SqliteHistory(tmp_path / "history.sqlite3") as history:
        app, announce = app_in(tmp_path, kind), MemoryAnnounce()
        [question_id] = handle_message(
            app.agent, START_MESSAGE, announce, history=history
        ).question_ids
        # A worker process takes the approval and is SIGKILLed inside the body (the refund
        # happened, the body did not return) or in the model's turn after it returned.
        in_worker(tmp_path, kind, f"{where}-sigkill", reply(question_id, APPROVE))
        assert effects_file.read_text() == "refund order-4471 41000\n"

        again = handle_message(app.agent, reply(question_id, APPROVE), announce, history=history)
        assert again.outcome is Outcome.RESUMED, again.detail
        if where == "body":
            # Whether the refund happened is a person's to say: yes records it done.
            [doubt] = again.report.envelopes
            assert doubt.question["function"] == "did_it_happen"
            again = handle_message(
                app.agent, reply(doubt.question_id, {"action": "yes"}), announce, history=history
            )
            assert again.outcome is Outcome.RESUMED, again.detail
        assert again.result is not None
        assert json.loads(again.result.output) == [None if where == "body" else "refunded 41000"]
        assert effects_file.read_text() == "refund order-4471 41000\n"


def test_sweep_redrives_an_answer_whose_run_a_crash_cut_short_once(
    ledger: SqliteLedger, tmp_path: Path
) -> None:
    app, history = refunds(ledger), InMemoryHistory()
    inbox = tmp_path / "inbox.sqlite3"
    [question_id] = handle_message(
        app.agent, START_MESSAGE, SqliteAnnounce(inbox), history=history
    ).question_ids

    def crash(message: Mapping[str, Any]) -> None:
        # The worker dies in the model's turn after the refund returned: nothing was stored.
        app.kill_in.add("report")
        with pytest.raises(WorkerKilled):
            handle_message(app.agent, message, SqliteAnnounce(inbox), history=history)

    again = redriven_after_a_lost_answer(inbox, tmp_path / "messages.sqlite3", question_id, crash)
    # The thread is still parked on the question: the answer sent again resumes it, and the
    # refund returns its recorded result.
    handled = handle_message(app.agent, again, SqliteAnnounce(inbox), history=history)
    assert handled.outcome is Outcome.RESUMED, handled.detail
    assert handled.result is not None
    assert json.loads(handled.result.output) == ["refunded 41000"]
    assert app.effects == ["refund order-4471 41000"]


def deferred_refunds(kind: str, *, effects_file: Path | None = None) -> Refunds:
    """:class:`Refunds` with a refund tool that is not a ``@wait`` one: ``requires_approval=True``
    or one that raises ``ApprovalRequired`` until approved. The host keeps its records."""
    made = Refunds(effects_file=effects_file)
    agent = Agent(FunctionModel(made.respond), output_type=[str, DeferredToolRequests])

    def refund(order_id: str, amount: int) -> str:
        made.effect(f"refund {order_id} {amount}")
        made.die_if_asked("body")
        return f"refunded {amount}"

    if kind == "requires_approval":

        @agent.tool_plain(requires_approval=True)
        def issue_refund(order_id: str, amount: int) -> str:
            return refund(order_id, amount)

    else:

        @agent.tool
        def issue_refund(ctx: RunContext[None], order_id: str, amount: int) -> str:  # pyright: ignore[reportRedeclaration]
            if not ctx.tool_call_approved:
                raise ApprovalRequired
            return refund(order_id, amount)

    made.agent = agent
    return made


DEFERRED = pytest.mark.parametrize("kind", ["requires_approval", "approval_required"])


@DEFERRED
def test_a_deferred_tool_killed_inside_its_approved_body_asks_and_no_runs_it_once(
    kind: str,
) -> None:
    app, history, announce = deferred_refunds(kind), InMemoryHistory(), MemoryAnnounce()
    [question_id] = handle_message(app.agent, START_MESSAGE, announce, history=history).question_ids
    app.kill_in.add("body")
    # The approval changes the amount: the run after "no" runs with the changed arguments.
    edited = {"action": "approve", "args": {"amount": 40000}}
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, edited), announce, history=history)
    assert app.effects == ["refund order-4471 40000"]

    again = handle_message(app.agent, reply(question_id, edited), announce, history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert app.effects == ["refund order-4471 40000"]
    [doubt] = again.report.envelopes
    assert doubt.question_id != question_id
    assert doubt.question["function"] == "did_it_happen"
    assert doubt.question["text"].startswith(
        "did `issue_refund(order_id='order-4471', amount=40000)` happen?"
    )
    assert doubt.allowed_actions == ["yes", "no"]
    refused = handle_message(app.agent, reply(doubt.question_id, APPROVE), history=history)
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail

    done = handle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), announce, history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 40000"]
    assert app.effects == ["refund order-4471 40000"] * 2
    late = handle_message(app.agent, reply(doubt.question_id, {"action": "no"}), history=history)
    assert late.outcome is Outcome.DUPLICATE, late.detail
    assert len(app.effects) == 2


@DEFERRED
def test_a_deferred_tool_killed_inside_its_body_answered_yes_never_runs_again(kind: str) -> None:
    app, history = deferred_refunds(kind), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, True), history=history)
    [doubt] = handle_message(app.agent, reply(question_id, True), history=history).report.envelopes

    answered = {"action": "yes", "result": "refunded 41000 (confirmed by hand)"}
    done = handle_message(app.agent, reply(doubt.question_id, answered), history=history)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert done.result is not None
    assert json.loads(done.result.output) == ["refunded 41000 (confirmed by hand)"]
    assert app.effects == ["refund order-4471 41000"]


@DEFERRED
def test_a_deferred_tool_that_returned_before_the_crash_is_not_run_again(kind: str) -> None:
    app, history = deferred_refunds(kind), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    app.kill_in.add("report")
    with pytest.raises(WorkerKilled):
        handle_message(app.agent, reply(question_id, APPROVE), history=history)

    again = handle_message(app.agent, reply(question_id, APPROVE), history=history)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert again.result is not None
    assert json.loads(again.result.output) == ["refunded 41000"]  # the recorded result
    assert app.effects == ["refund order-4471 41000"]
    [record] = [r for r in configured_ledger().records() if r.done]  # pyright: ignore[reportAttributeAccessIssue]
    assert record.result == "refunded 41000"


@DEFERRED
def test_a_denied_deferred_tool_keeps_no_record(kind: str) -> None:
    app, history = deferred_refunds(kind), InMemoryHistory()
    [question_id] = handle_message(app.agent, START_MESSAGE, history=history).question_ids
    denied = handle_message(app.agent, reply(question_id, "not this one"), history=history)
    assert denied.outcome is Outcome.RESUMED, denied.detail
    assert app.effects == []
    assert configured_ledger().records() == []  # pyright: ignore[reportAttributeAccessIssue]


async def test_async_a_streamed_deferred_tool_killed_inside_its_body_asks_on_redelivery() -> None:
    app, history = deferred_refunds("requires_approval"), InMemoryHistory()
    started = await ahandle_message(app.agent, START_MESSAGE, history=history)
    [question_id] = started.question_ids
    app.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        await ahandle_message(app.agent, reply(question_id, APPROVE), history=history)

    run = astream_message(app.agent, reply(question_id, APPROVE), history=history)
    async for _ in run:
        pass
    assert run.handled.outcome is Outcome.RESUMED, run.handled.detail
    [doubt] = run.handled.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    done = await ahandle_message(
        app.agent, reply(doubt.question_id, {"action": "no"}), history=history
    )
    assert done.outcome is Outcome.RESUMED, done.detail
    assert app.effects == ["refund order-4471 41000"] * 2
