"""The host state machine in core: every outcome, both runners, on a host without a framework.

``Ledger`` is a complete :class:`~agent_wait.host.Host` kept in memory: a run asks
``asks`` questions one after the other (``<thread>-q<n>``), or several at once with
``together``; answers must be JSON objects. The framework packages run the same machine on
their real runtimes through :class:`~agent_wait.testing.HostContract`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

import agent_wait.host as core_host
from agent_wait.core import (
    AnnounceFailed,
    Answer,
    BaseAnnounce,
    Handled,
    InvalidAnswer,
    MemoryAnnounce,
    Outcome,
    PublishReport,
    Question,
    StartMessage,
    WaitEnvelope,
)
from agent_wait.core._canonical import answer_digest
from agent_wait.core._config import AgentWaitConfig, load_config
from agent_wait.host import AsyncHost, Host, QuestionNotPending, Waiting
from agent_wait.host.adapter import question_from_value


def test_outcome_values_are_the_documented_strings() -> None:
    assert [o.value for o in Outcome] == [
        "started",
        "resumed",
        "republished",
        "duplicate",
        "unknown_question",
        "invalid_answer",
        "resume_failed",
        "held",
        "unauthorized",
        "stale_approval",
        "expired",
        "continued",
    ]


def test_only_starts_resumes_and_continued_runs_ran() -> None:
    ran = {o for o in Outcome if Handled(o).ran}
    assert ran == {Outcome.STARTED, Outcome.RESUMED, Outcome.CONTINUED}
    # A held answer is stored, not run, and publishes nothing.
    held = Handled(Outcome.HELD, detail="waiting for q2")
    assert not held.ran
    assert held.report == PublishReport()
    assert held.question_ids == []


def test_public_module() -> None:
    assert sorted(core_host.__all__) == [
        "ActionNotAllowed",
        "AlreadyVoted",
        "AnswerNotAccepted",
        "AnswerResult",
        "AnswerTrust",
        "AnswersResult",
        "ApproverConfig",
        "AsyncHost",
        "AsyncStreamed",
        "AsyncStreamingHost",
        "Clock",
        "FRAMEWORKS",
        "FrameworkWorker",
        "Handled",
        "Host",
        "Message",
        "MessageOptions",
        "NothingToResend",
        "Outcome",
        "QuestionClosed",
        "QuestionDecided",
        "QuestionNotFound",
        "QuestionNotPending",
        "QuorumNotSupported",
        "Ran",
        "SendUnconfirmed",
        "ServeOptions",
        "ServeReport",
        "ServeStatus",
        "SqliteThreadTable",
        "Step",
        "Streamed",
        "StreamingHost",
        "SweepReport",
        "Waiting",
        "ahandle_message",
        "answer",
        "answer_many",
        "approvers_of",
        "aserve_entry",
        "aserve_host",
        "astream_message",
        "cancel",
        "configured_store",
        "default_approver",
        "default_store",
        "describe_asker",
        "handle_message",
        "load_approver_config",
        "may_answer",
        "may_see",
        "plan",
        "refuse_unknown",
        "resend",
        "serve_entry",
        "serve_host",
        "share_messages",
        "stream_message",
        "sweep",
    ]
    assert core_host.Handled is Handled


@dataclass
class Thread:
    asked: list[str] = field(default_factory=list[str])
    pending: list[str] = field(default_factory=list[str])
    held: dict[str, Any] = field(default_factory=dict[str, Any])
    answers: list[tuple[str, Any]] = field(default_factory=list[tuple[str, Any]])


@dataclass
class Result:
    thread_id: str
    pending: list[str]


class Ledger(Host[Thread, Result]):
    """A framework kept in memory: what the planner needs and nothing else."""

    def __init__(self, asks: int = 2, *, together: bool = False) -> None:
        self.asks = asks
        self.holds_answers = together
        self.threads: dict[str, Thread] = {}
        self.runs: list[str] = []
        self.meanwhile: set[str] = set()

    def load(self, thread_id: str) -> Thread:
        return self.threads.setdefault(thread_id, Thread())

    def waiting(self, thread: Thread) -> Waiting:
        return Waiting([_question(i) for i in thread.pending], dict(thread.held))

    def asked(self, thread: Thread, question_id: str) -> bool:
        return question_id in thread.asked

    def check(self, thread: Thread, answer: Answer) -> Any:
        if not isinstance(answer.answer, dict):
            raise InvalidAnswer(f"answer: expected an object, got {answer.answer!r}")
        return answer.answer

    def hold(self, thread: Thread, answers: Mapping[str, Any]) -> None:
        thread.held = dict(answers)

    def start(self, thread: Thread, message: StartMessage) -> Result:
        self.runs.append(f"start {message.thread_id}")
        return self._ask(thread, message.thread_id)

    def resume(self, thread: Thread, answers: Mapping[str, Any]) -> Result:
        thread_id = next(t for t, state in self.threads.items() if state is thread)
        if set(answers) & self.meanwhile:
            raise QuestionNotPending(f"{sorted(answers)} answered meanwhile")
        self.runs.append(f"resume {thread_id} {sorted(answers)}")
        thread.answers.extend(answers.items())
        thread.pending = [i for i in thread.pending if i not in answers]
        thread.held = {}
        return self._ask(thread, thread_id)

    def _ask(self, thread: Thread, thread_id: str) -> Result:
        if not thread.pending and len(thread.asked) < self.asks:
            count = self.asks - len(thread.asked) if self.holds_answers else 1
            for _ in range(count):
                question_id = f"{thread_id}-q{len(thread.asked) + 1}"
                thread.asked.append(question_id)
                thread.pending.append(question_id)
        return Result(thread_id, list(thread.pending))

    def questions_in(self, result: Result) -> list[Question]:
        return [_question(i) for i in result.pending]


class AsyncLedger(AsyncHost[Thread, Result]):
    """The same ledger behind awaitable IO."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.holds_answers = ledger.holds_answers

    def waiting(self, thread: Thread) -> Waiting:
        return self.ledger.waiting(thread)

    def check(self, thread: Thread, answer: Answer) -> Any:
        return self.ledger.check(thread, answer)

    def questions_in(self, result: Result) -> list[Question]:
        return self.ledger.questions_in(result)

    async def load(self, thread_id: str) -> Thread:
        await asyncio.sleep(0)
        return self.ledger.load(thread_id)

    async def asked(self, thread: Thread, question_id: str) -> bool:
        return self.ledger.asked(thread, question_id)

    async def hold(self, thread: Thread, answers: Mapping[str, Any]) -> None:
        self.ledger.hold(thread, answers)

    async def start(self, thread: Thread, message: StartMessage) -> Result:
        return self.ledger.start(thread, message)

    async def resume(self, thread: Thread, answers: Mapping[str, Any]) -> Result:
        return self.ledger.resume(thread, answers)


def _question(question_id: str) -> Question:
    return Question(question_id=question_id, question={"approve": question_id})


def reply(question_id: str, answer: Any = None, thread_id: str = "t") -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "question_id": question_id,
        "answer": {"action": "approve"} if answer is None else answer,
    }


class Down(BaseAnnounce):
    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("transport down")


def test_every_outcome_in_order() -> None:
    ledger, inbox = Ledger(), MemoryAnnounce()

    def handle(message: Any) -> Handled:
        return core_host.handle_message(ledger, message, inbox)

    started = handle({"thread_id": "t", "input": "go"})
    assert (started.outcome, started.question_ids, started.detail) == (
        Outcome.STARTED,
        ["t-q1"],
        None,
    )
    again = handle({"thread_id": "t", "input": "go"})
    assert (again.outcome, again.question_ids, again.result) == (
        Outcome.REPUBLISHED,
        ["t-q1"],
        None,
    )
    assert "'t'" in (again.detail or "")
    assert "t-q1" in (again.detail or "")
    unknown = handle(reply("t-q9"))
    assert (unknown.outcome, unknown.question_ids) == (Outcome.UNKNOWN_QUESTION, [])
    assert unknown.detail == "thread 't' never asked question 't-q9'; nothing ran"
    invalid = handle(reply("t-q1", "yes"))
    assert invalid.outcome is Outcome.INVALID_ANSWER
    assert invalid.detail == (
        "question 't-q1' of thread 't': the answer was refused before anything was saved: "
        "answer: expected an object, got 'yes'"
    )
    resumed = handle(reply("t-q1"))
    assert (resumed.outcome, resumed.question_ids) == (Outcome.RESUMED, ["t-q2"])
    assert resumed.result == Result("t", ["t-q2"])
    # The first answer again: a duplicate that republishes what the thread waits on now.
    duplicate = handle(reply("t-q1", {"action": "reject"}))
    assert (duplicate.outcome, duplicate.question_ids) == (Outcome.DUPLICATE, ["t-q2"])
    assert "no longer pending" in (duplicate.detail or "")
    assert "['t-q2']" in (duplicate.detail or "")
    finished = handle(reply("t-q2"))
    assert (finished.outcome, finished.question_ids, finished.parked) == (
        Outcome.RESUMED,
        [],
        False,
    )
    late = handle(reply("t-q2"))
    assert (late.outcome, late.report) == (Outcome.DUPLICATE, PublishReport())
    assert "it is not parked" in (late.detail or "")
    assert ledger.runs == ["start t", "resume t ['t-q1']", "resume t ['t-q2']"]
    approve = {"action": "approve"}
    assert ledger.threads["t"].answers == [("t-q1", approve), ("t-q2", approve)]
    assert inbox.question_ids == ["t-q1", "t-q1", "t-q2", "t-q2"]


def test_answers_are_held_until_every_pending_question_has_one() -> None:
    ledger, inbox = Ledger(asks=2, together=True), MemoryAnnounce()
    started = core_host.handle_message(ledger, {"thread_id": "t", "input": None}, inbox)
    assert started.question_ids == ["t-q1", "t-q2"]
    held = core_host.handle_message(ledger, reply("t-q2"), inbox)
    assert (held.outcome, held.report) == (Outcome.HELD, PublishReport())
    assert held.detail == "answer to 't-q2' held; thread 't' resumes once ['t-q1'] are answered too"
    twice = core_host.handle_message(ledger, reply("t-q2", {"action": "reject"}), inbox)
    assert (twice.outcome, twice.question_ids) == (Outcome.DUPLICATE, ["t-q1"])
    assert "the first answer stands" in (twice.detail or "")
    republished = core_host.handle_message(ledger, {"thread_id": "t", "input": None}, inbox)
    assert republished.question_ids == ["t-q1"], "a held question is not waited on"
    resumed = core_host.handle_message(ledger, reply("t-q1"), inbox)
    assert resumed.outcome is Outcome.RESUMED
    # Resumed once, with both answers in publish order, the held one as first sent.
    assert ledger.runs == ["start t", "resume t ['t-q1', 't-q2']"]
    assert [i for i, _ in ledger.threads["t"].answers] == ["t-q1", "t-q2"]


def test_an_answer_taken_meanwhile_is_a_duplicate() -> None:
    ledger = Ledger()
    core_host.handle_message(ledger, {"thread_id": "t", "input": 1}, MemoryAnnounce())
    ledger.meanwhile.add("t-q1")
    handled = core_host.handle_message(ledger, reply("t-q1"), MemoryAnnounce())
    assert (handled.outcome, handled.report) == (Outcome.DUPLICATE, PublishReport())
    assert "answered meanwhile" in (handled.detail or "")


def test_a_strict_publish_failure_raises_after_the_run_and_the_redelivery_republishes() -> None:
    ledger, inbox = Ledger(), MemoryAnnounce()
    with pytest.raises(AnnounceFailed) as failed:
        core_host.handle_message(ledger, {"thread_id": "t", "input": 1}, Down(), strict=True)
    assert failed.value.report.question_ids == ["t-q1"]
    assert ledger.runs == ["start t"], "the run happened and was kept"
    again = core_host.handle_message(ledger, {"thread_id": "t", "input": 1}, inbox, strict=True)
    assert (again.outcome, again.question_ids) == (Outcome.REPUBLISHED, ["t-q1"])
    with pytest.raises(AnnounceFailed):
        core_host.handle_message(ledger, reply("t-q1"), Down(), strict=True)
    redelivered = core_host.handle_message(ledger, reply("t-q1"), inbox, strict=True)
    assert (redelivered.outcome, redelivered.question_ids) == (Outcome.DUPLICATE, ["t-q2"])
    assert ledger.runs == ["start t", "resume t ['t-q1']"]


def test_a_message_is_handled_under_the_configuration_read_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[AgentWaitConfig] = []

    class Reading(Ledger):
        def start(self, thread: Thread, message: StartMessage) -> Result:
            read.append(load_config())
            monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "log"}]')
            read.append(load_config())
            return super().start(thread, message)

    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "memory"}]')
    core_host.handle_message(Reading(), {"thread_id": "t", "input": 1}, MemoryAnnounce())
    assert read[0] is read[1]
    assert load_config().announce[0].use == "log"  # the next message reads it again


async def test_an_async_message_is_handled_under_the_configuration_read_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[AgentWaitConfig] = []

    class Reading(AsyncLedger):
        async def start(self, thread: Thread, message: StartMessage) -> Result:
            read.append(load_config())
            monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "log"}]')
            # A blocking call the host makes in a worker thread sees the same.
            read.append(await asyncio.to_thread(load_config))
            return await super().start(thread, message)

    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", '[{"use": "memory"}]')
    message = {"thread_id": "t", "input": 1}
    await core_host.ahandle_message(Reading(Ledger()), message, MemoryAnnounce())
    assert read[0] is read[1]


def test_an_unknown_option_is_refused_naming_it_and_the_closest() -> None:
    message = {"thread_id": "t", "input": 1}
    options: dict[str, Any] = {"stirct": True}
    with pytest.raises(
        TypeError,
        match=r"handle_message\(\) got an unexpected keyword argument "
        r"'stirct'; did you mean 'strict'\?",
    ):
        core_host.handle_message(Ledger(), message, MemoryAnnounce(), **options)
    with pytest.raises(TypeError, match=r"stream_message\(\) .* 'colour'$"):
        core_host.stream_message(Ledger(), message, MemoryAnnounce(), colour=1)  # pyright: ignore[reportCallIssue]


async def test_an_unknown_option_is_refused_by_the_async_runners_too() -> None:
    message = {"thread_id": "t", "input": 1}
    with pytest.raises(TypeError, match=r"ahandle_message\(\) .* did you mean 'trust'"):
        await core_host.ahandle_message(
            AsyncLedger(Ledger()),
            message,
            MemoryAnnounce(),
            trusts=None,  # pyright: ignore[reportCallIssue]
        )


def test_errors_the_plan_does_not_decide_propagate() -> None:
    class Broken(Ledger):
        def start(self, thread: Thread, message: StartMessage) -> Result:
            raise RuntimeError("model unreachable")

    with pytest.raises(RuntimeError, match="model unreachable"):
        core_host.handle_message(Broken(), {"thread_id": "t", "input": 1}, MemoryAnnounce())


def test_a_host_that_holds_answers_must_implement_hold() -> None:
    class Forgetful(Host[Thread, Result]):
        holds_answers = True

        def __init__(self) -> None:
            self.ledger = Ledger(together=True)

        def load(self, thread_id: str) -> Thread:
            return self.ledger.load(thread_id)

        def waiting(self, thread: Thread) -> Waiting:
            return self.ledger.waiting(thread)

        def asked(self, thread: Thread, question_id: str) -> bool:
            return self.ledger.asked(thread, question_id)

        def check(self, thread: Thread, answer: Answer) -> Any:
            return answer.answer

        def start(self, thread: Thread, message: StartMessage) -> Result:
            return self.ledger.start(thread, message)

        def resume(self, thread: Thread, answers: Mapping[str, Any]) -> Result:
            return self.ledger.resume(thread, answers)

        def questions_in(self, result: Result) -> list[Question]:
            return self.ledger.questions_in(result)

    host = Forgetful()
    core_host.handle_message(host, {"thread_id": "t", "input": 1}, MemoryAnnounce())
    with pytest.raises(TypeError, match="Forgetful sets holds_answers but does not implement"):
        core_host.handle_message(host, reply("t-q1"), MemoryAnnounce())


async def test_the_async_runner_takes_the_same_decisions() -> None:
    ledger, inbox = Ledger(), MemoryAnnounce()
    host = AsyncLedger(ledger)
    outcomes = [
        (await core_host.ahandle_message(host, message, inbox)).outcome
        for message in (
            {"thread_id": "t", "input": 1},
            {"thread_id": "t", "input": 1},
            reply("t-q7"),
            reply("t-q1", []),
            reply("t-q1"),
            reply("t-q1"),
            reply("t-q2"),
        )
    ]
    assert outcomes == [
        Outcome.STARTED,
        Outcome.REPUBLISHED,
        Outcome.UNKNOWN_QUESTION,
        Outcome.INVALID_ANSWER,
        Outcome.RESUMED,
        Outcome.DUPLICATE,
        Outcome.RESUMED,
    ]
    assert inbox.question_ids == ["t-q1", "t-q1", "t-q2", "t-q2"]
    with pytest.raises(AnnounceFailed):
        await core_host.ahandle_message(host, {"thread_id": "u", "input": 1}, Down(), strict=True)
    assert ledger.runs[-1] == "start u"


def test_plan_is_free_of_io() -> None:
    ledger = Ledger()
    steps = core_host.plan(ledger, Answer(thread_id="t", question_id="t-q1", answer={}))
    assert next(steps) == ("load", ("t",))
    thread = Thread(asked=["t-q1"], pending=["t-q1"])
    name, args = steps.send(thread)
    assert (name, args) == ("resume", (thread, {"t-q1": {}}))
    name, (questions, thread_id) = steps.send(Result("t", ["t-q2"]))
    assert (name, [q.question_id for q in questions], thread_id) == ("publish", ["t-q2"], "t")
    with pytest.raises(StopIteration) as done:
        steps.send(PublishReport())
    handled = done.value.value
    assert (handled.outcome, handled.result) == (Outcome.RESUMED, Result("t", ["t-q2"]))
    assert ledger.runs == [], "the plan performed no step itself"


class Fragile(Ledger):
    """A ledger whose resume fails on an answer it cannot read, keeping nothing of it."""

    def resume(self, thread: Thread, answers: Mapping[str, Any]) -> Result:
        for value in answers.values():
            if "reason" in value:
                raise ValueError(f"cannot read {value['reason']!r}")
        return super().resume(thread, answers)


def test_a_resume_that_raises_is_reported_and_the_question_takes_another_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    ledger, inbox = Fragile(), MemoryAnnounce()
    [question_id] = core_host.handle_message(
        ledger, {"thread_id": "t", "input": "go"}, inbox
    ).question_ids
    with caplog.at_level(logging.INFO):
        failed = core_host.handle_message(
            ledger, reply(question_id, {"reason": "DE89 3704"}), inbox
        )
    assert failed.outcome is Outcome.RESUME_FAILED
    assert isinstance(failed.error, ValueError)
    assert not failed.ran
    assert failed.report == PublishReport()
    assert failed.detail == (
        f"question {question_id!r} of thread 't': the resume raised ValueError: cannot read "
        "'DE89 3704'; the question is still pending and takes another answer"
    )
    assert "ValueError" in caplog.text
    assert "DE89" not in caplog.text
    resumed = core_host.handle_message(ledger, reply(question_id), inbox)
    assert resumed.outcome is Outcome.RESUMED


async def test_ahandle_message_reports_a_failed_resume_too() -> None:
    ledger = Fragile()
    host = AsyncLedger(ledger)
    started = await core_host.ahandle_message(
        host, {"thread_id": "t", "input": "go"}, MemoryAnnounce()
    )
    [question_id] = started.question_ids
    failed = await core_host.ahandle_message(
        host, reply(question_id, {"reason": "x"}), MemoryAnnounce()
    )
    assert failed.outcome is Outcome.RESUME_FAILED
    assert "still pending" in (failed.detail or "")


async def test_a_failed_resume_with_the_question_pending_is_announced_as_refused() -> None:
    ledger = Fragile()
    host = AsyncLedger(ledger)
    audit = MemoryAnnounce().with_lifecycle_events("wait.answer_refused", "wait.answered")
    started = await core_host.ahandle_message(host, {"thread_id": "t", "input": "go"}, audit)
    [question_id] = started.question_ids
    given = {"reason": "x", "n": 1.0}
    failed = await core_host.ahandle_message(
        host, {**reply(question_id, given), "answered_by": "bob"}, audit
    )
    assert failed.outcome is Outcome.RESUME_FAILED
    assert failed.refused == (question_id,)
    [event] = audit.events
    assert (event.type, event.question_id, event.by, event.outcome) == (
        "wait.answer_refused",
        question_id,
        "bob",
        "resume_failed",
    )
    assert event.reason == failed.detail
    assert event.answer_digest == answer_digest({"n": 1, "reason": "x"})
    resumed = await core_host.ahandle_message(host, reply(question_id), audit)
    assert (resumed.outcome, resumed.refused) == (Outcome.RESUMED, ())
    assert [e.type for e in audit.events] == ["wait.answer_refused", "wait.answered"]


def test_a_deferred_waiting_builds_its_questions_once_and_only_when_read() -> None:
    built: list[int] = []
    questions = [question_from_value(f"q{n}", f"question {n}?") for n in range(2)]

    def build() -> list[Question]:
        built.append(1)
        return questions

    waiting = Waiting.deferred(["q0", "q1"], build, held={"q0": "yes"})
    assert (waiting.ids, len(waiting.questions), built) == (["q0", "q1"], 2, [])
    assert [q.question_id for q in waiting.unanswered] == ["q1"]
    assert waiting.questions[1] is questions[1]
    assert list(waiting.questions) == questions
    assert built == [1]
