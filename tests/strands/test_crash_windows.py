"""A worker that dies inside a Strands run: the approved body runs at most once, the run goes on.

The kills are a BaseException raised where the worker dies (Strands' own clean-up then runs, as
it does not on a SIGKILL) and, for the body, a real SIGKILL of a worker process. The agents run
their tools one after the other: Strands' default concurrent executor swallows a BaseException
raised in a tool (its task ends without a result and the run goes on), which a SIGKILL is not.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from strands import Agent, ToolContext, tool
from strands.hooks import AfterToolCallEvent, BeforeToolCallEvent, HookProvider, HookRegistry
from strands.session import FileSessionManager
from strands.tools.executors import SequentialToolExecutor

from agent_wait.core import MemoryAnnounce, Outcome, SqliteAnnounce, WaitEnvelope, WaitPolicy
from agent_wait.strands import ahandle_message, handle_message, wait
from tests.redrive import redriven_after_a_lost_answer
from tests.reliability.killed import die, killed_worker
from tests.strands.fake_model import Call, ScriptedModel

THREAD = "order-4471"
START = {"thread_id": THREAD, "input": "refund order-4471"}


class WorkerKilled(BaseException):
    """What a SIGKILL looks like from inside: the run stops where it is, nothing is caught."""


class DyingModel(ScriptedModel):
    """Asks for the refund, then answers; dies on the call named in ``kill_in`` when it comes.

    ``"first"``: the call that reads the prompt; ``"after-tools"``: the call that reads the
    refund's result (the tool results are saved by then).
    """

    def __init__(self, kill_in: set[str]) -> None:
        super().__init__([Call("issue_refund", {"order_id": THREAD, "amount": 41000})])
        self.kill_in = kill_in

    async def stream(self, messages: Any, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        results = any("toolResult" in block for block in messages[-1]["content"])
        where = "after-tools" if results else "first"
        if where in self.kill_in:
            self.kill_in.discard(where)
            raise WorkerKilled(where)
        async for event in super().stream(messages, *args, **kwargs):
            yield event


class DieAroundTool(HookProvider):
    """Dies before the tool runs (``"before-tool"``: its call is saved, the run has not parked),
    or once it returned, before Strands saves its result (``"after-body"``)."""

    def __init__(self, kill_in: set[str]) -> None:
        self.kill_in = kill_in

    def register_hooks(self, registry: HookRegistry, **kwargs: Any) -> None:
        registry.add_callback(BeforeToolCallEvent, lambda _: self.die("before-tool"))
        registry.add_callback(AfterToolCallEvent, lambda _: self.die("after-body"))

    def die(self, where: str) -> None:
        if where in self.kill_in:
            self.kill_in.discard(where)
            raise WorkerKilled(where)


class Refunds:
    """A thread's agent factory with a gated refund whose effects go to a file.

    ``kill_in`` names where the worker dies next: ``"body"`` (after the effect, before the body
    returns), ``"body-sigkill"`` (the same, with a real SIGKILL of this process),
    ``"after-body"``, or a :class:`DyingModel` place.
    """

    def __init__(
        self, root: Path, *, once: bool = True, asynchronous: bool = False, session: bool = True
    ) -> None:
        self.sessions = root / "sessions" if session else None
        # Without a session, the agents live in this process's memory, one per thread.
        self.in_memory: dict[str, Agent] = {}
        self.effects_file = root / "effects.txt"
        self.kill_in: set[str] = set()
        kill_in = self.kill_in
        effects_file = self.effects_file

        def effect(order_id: str, amount: int) -> str:
            with effects_file.open("a") as out:
                out.write(f"refund {order_id} {amount}\n")
            if "body-sigkill" in kill_in:
                die()
            if "body" in kill_in:
                kill_in.discard("body")
                raise WorkerKilled("body")
            return f"refunded {amount}"

        policy = WaitPolicy(timeout="PT1H", tags={"approver_group": "finance"})

        @tool(context=True, name="issue_refund")
        @wait(policy, once=once)
        async def issue_refund_async(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            return effect(order_id, amount)

        @tool(context=True)
        @wait(policy, once=once)
        def issue_refund(order_id: str, amount: int, tool_context: ToolContext) -> str:
            """Refund an order."""
            return effect(order_id, amount)

        self.tool = issue_refund_async if asynchronous else issue_refund

    @property
    def effects(self) -> list[str]:
        if not self.effects_file.exists():
            return []
        return self.effects_file.read_text().splitlines()

    def __call__(self, thread_id: str) -> Agent:
        if self.sessions is None and thread_id in self.in_memory:
            return self.in_memory[thread_id]
        agent = Agent(
            model=DyingModel(self.kill_in),
            tools=[self.tool],
            hooks=[DieAroundTool(self.kill_in)],
            tool_executor=SequentialToolExecutor(),
            session_manager=None
            if self.sessions is None
            else FileSessionManager(session_id=thread_id, storage_dir=str(self.sessions)),
            callback_handler=None,
        )
        if self.sessions is None:
            self.in_memory[thread_id] = agent
        return agent

    def repository(self) -> FileSessionManager:
        return FileSessionManager(session_id=THREAD, storage_dir=str(self.sessions))


def reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {**envelope.reply_with.model_dump(), "answer": answer}


def approve(envelope: WaitEnvelope) -> dict[str, Any]:
    return reply(envelope, {"action": "approve"})


def parked(refunds: Refunds, announce: MemoryAnnounce) -> WaitEnvelope:
    [envelope] = handle_message(refunds, START, announce).report.envelopes
    return envelope


def test_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), announce)
    assert refunds.effects == ["refund order-4471 41000"]

    # The redelivery runs nothing: whether the refund happened is a person's to say.
    again = handle_message(refunds, approve(question), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert refunds.effects == ["refund order-4471 41000"]
    [doubt] = again.report.envelopes
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
    assert doubt.question_id != question.question_id
    # Another copy of the approval runs nothing.
    assert handle_message(refunds, approve(question), announce).outcome is Outcome.DUPLICATE
    refused = handle_message(refunds, reply(doubt, {"action": "approve"}), announce)
    assert refused.outcome is Outcome.INVALID_ANSWER, refused.detail

    done = handle_message(refunds, reply(doubt, {"action": "no"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert str(done.result).strip() == "done: refunded 41000"
    assert refunds.effects == ["refund order-4471 41000", "refund order-4471 41000"]
    assert (
        handle_message(refunds, reply(doubt, {"action": "no"}), announce).outcome
        is Outcome.DUPLICATE
    )
    assert len(refunds.effects) == 2


def test_a_crash_inside_the_body_answered_yes_records_it_done_with_the_given_result(
    tmp_path: Path,
) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), announce)
    [doubt] = handle_message(refunds, approve(question), announce).report.envelopes

    answered = {"action": "yes", "result": "refunded 41000 (confirmed by hand)"}
    done = handle_message(refunds, reply(doubt, answered), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert str(done.result).strip() == "done: refunded 41000 (confirmed by hand)"
    assert refunds.effects == ["refund order-4471 41000"]


def test_a_worker_sigkilled_inside_the_body_leaves_an_in_doubt_question(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    # A worker process takes the approval and is SIGKILLed inside the body: no clean-up runs.
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from agent_wait.core import MemoryAnnounce\n"
        "from agent_wait.strands import handle_message\n"
        "from tests.strands.test_crash_windows import Refunds\n"
        "refunds = Refunds(Path(sys.argv[1]))\n"
        "refunds.kill_in.add('body-sigkill')\n"
        "handle_message(refunds, json.loads(sys.argv[2]), MemoryAnnounce())\n"
    )
    killed_worker(code, str(tmp_path), json.dumps(approve(question)))
    assert refunds.effects == ["refund order-4471 41000"]

    again = handle_message(refunds, approve(question), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert refunds.effects == ["refund order-4471 41000"]
    done = handle_message(refunds, reply(doubt, {"action": "yes"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert refunds.effects == ["refund order-4471 41000"]


def test_a_body_that_returned_before_the_crash_is_not_run_again(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    refunds.kill_in.add("after-body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), announce)

    again = handle_message(refunds, approve(question), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    assert str(again.result).strip() == "done: refunded 41000"  # the recorded result
    assert refunds.effects == ["refund order-4471 41000"]


def test_once_false_keeps_the_framework_semantics(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path, once=False)
    question = parked(refunds, MemoryAnnounce())
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), MemoryAnnounce())
    again = handle_message(refunds, approve(question), MemoryAnnounce())
    assert again.outcome is Outcome.RESUMED, again.detail
    assert refunds.effects == ["refund order-4471 41000", "refund order-4471 41000"]


@pytest.mark.parametrize("from_record", [False, True], ids=["built", "session-record"])
def test_an_answer_redelivered_after_the_tool_results_were_saved_continues_the_run(
    tmp_path: Path, from_record: bool
) -> None:
    refunds = Refunds(tmp_path)
    repository = refunds.repository() if from_record else None
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    refunds.kill_in.add("after-tools")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), announce, session_repository=repository)
    assert refunds.effects == ["refund order-4471 41000"]
    assert "toolResult" in refunds(THREAD).messages[-1]["content"][0]  # the results were saved

    again = handle_message(refunds, approve(question), announce, session_repository=repository)
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert str(again.result).strip() == "done: refunded 41000"
    assert refunds.effects == ["refund order-4471 41000"]
    # The thread finished: a third copy is the duplicate it always was.
    third = handle_message(refunds, approve(question), announce, session_repository=repository)
    assert third.outcome is Outcome.DUPLICATE, third.detail


def test_a_start_message_redelivered_after_a_crash_continues_without_running_twice(
    tmp_path: Path,
) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    refunds.kill_in.add("first")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, START, announce)
    assert [m["role"] for m in refunds(THREAD).messages] == ["user"]  # the prompt was saved

    again = handle_message(refunds, START, announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    [question] = again.report.envelopes
    assert question.source is not None
    assert question.source.function == "issue_refund"
    # The prompt was not added a second time, and the thread is parked on the question.
    assert [m["role"] for m in refunds(THREAD).messages] == ["user", "assistant"]
    assert handle_message(refunds, START, announce).outcome is Outcome.REPUBLISHED


def test_a_start_message_redelivered_after_the_tool_call_was_saved_runs_it_and_parks(
    tmp_path: Path,
) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    refunds.kill_in.add("before-tool")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, START, announce)
    assert [m["role"] for m in refunds(THREAD).messages] == ["user", "assistant"]
    assert announce.envelopes == []

    again = handle_message(refunds, START, announce)
    assert again.outcome is Outcome.CONTINUED, again.detail
    [question] = again.report.envelopes
    assert question.source is not None
    assert question.source.function == "issue_refund"
    done = handle_message(refunds, approve(question), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert refunds.effects == ["refund order-4471 41000"]


async def test_async_a_crash_inside_the_body_asks_a_person_and_no_runs_it_once(
    tmp_path: Path,
) -> None:
    refunds = Refunds(tmp_path, asynchronous=True)
    announce = MemoryAnnounce()
    [question] = (await ahandle_message(refunds, START, announce)).report.envelopes
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        await ahandle_message(refunds, approve(question), announce)
    again = await ahandle_message(refunds, approve(question), announce)
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    assert refunds.effects == ["refund order-4471 41000"]
    done = await ahandle_message(refunds, reply(doubt, {"action": "no"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert str(done.result).strip() == "done: refunded 41000"
    assert refunds.effects == ["refund order-4471 41000", "refund order-4471 41000"]


async def test_async_an_answer_redelivered_after_the_tool_results_were_saved_continues_the_run(
    tmp_path: Path,
) -> None:
    refunds = Refunds(tmp_path, asynchronous=True)
    announce = MemoryAnnounce()
    [question] = (await ahandle_message(refunds, START, announce)).report.envelopes
    refunds.kill_in.add("after-tools")
    with pytest.raises(WorkerKilled):
        await ahandle_message(refunds, approve(question), announce)
    again = await ahandle_message(
        refunds, approve(question), announce, session_repository=refunds.repository()
    )
    assert again.outcome is Outcome.CONTINUED, again.detail
    assert str(again.result).strip() == "done: refunded 41000"
    assert refunds.effects == ["refund order-4471 41000"]


def test_the_record_is_per_session_though_tool_use_ids_repeat(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path)
    announce = MemoryAnnounce()
    first = parked(refunds, announce)
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(first), announce)
    # Another thread, whose model call gets the same tool use id: its own record.
    [other] = handle_message(
        refunds, {"thread_id": "order-4472", "input": "refund"}, announce
    ).report.envelopes
    assert other.question_id == first.question_id  # Strands' ids repeat across sessions
    done = handle_message(refunds, approve(other), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert str(done.result).strip() == "done: refunded 41000"
    assert len(refunds.effects) == 2


def test_an_agent_without_a_session_runs_its_body_once_in_its_process(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path, session=False)
    announce = MemoryAnnounce()
    question = parked(refunds, announce)
    refunds.kill_in.add("body")
    with pytest.raises(WorkerKilled):
        handle_message(refunds, approve(question), announce)
    assert refunds.effects == ["refund order-4471 41000"]

    # The same process, the same agent: the record is kept under the thread, so the answer
    # handed out again runs nothing and asks.
    again = handle_message(refunds, approve(question), announce)
    assert again.outcome is Outcome.RESUMED, again.detail
    [doubt] = again.report.envelopes
    assert doubt.question["function"] == "did_it_happen"
    done = handle_message(refunds, reply(doubt, {"action": "yes"}), announce)
    assert done.outcome is Outcome.RESUMED, done.detail
    assert refunds.effects == ["refund order-4471 41000"]


def test_an_answer_to_an_agent_without_a_session_in_a_new_process_says_it_was_lost(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    question = parked(Refunds(tmp_path, session=False), MemoryAnnounce())

    # A restarted worker: its agents are new, and never asked anything.
    restarted = Refunds(tmp_path, session=False)
    handled = handle_message(restarted, approve(question), MemoryAnnounce())
    assert handled.outcome is Outcome.UNKNOWN_QUESTION
    assert handled.detail is not None
    assert "its Agent has no session manager" in handled.detail
    assert "cannot be answered" in handled.detail
    assert "has no session manager" in caplog.text
    assert restarted.effects == []


def test_sweep_redrives_an_answer_whose_run_a_crash_left_unfinished_once(tmp_path: Path) -> None:
    refunds = Refunds(tmp_path)
    inbox = tmp_path / "inbox.sqlite3"
    [question_id] = handle_message(refunds, START, SqliteAnnounce(inbox)).question_ids

    def crash(message: Mapping[str, Any]) -> None:
        # The worker dies after the refund's result was saved, before the model answered it.
        refunds.kill_in.add("after-tools")
        with pytest.raises(WorkerKilled):
            handle_message(refunds, message, SqliteAnnounce(inbox))

    again = redriven_after_a_lost_answer(inbox, tmp_path / "messages.sqlite3", question_id, crash)
    handled = handle_message(refunds, again, SqliteAnnounce(inbox))
    assert handled.outcome is Outcome.CONTINUED, handled.detail
    assert str(handled.result).strip() == "done: refunded 41000"
    assert refunds.effects == ["refund order-4471 41000"]
