"""Conformance kit for framework hosts (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any, ClassVar

import pytest
from ulid import ULID

from agent_wait.core import Handled, Outcome
from agent_wait.core._announce import BaseAnnounce
from agent_wait.core._canonical import answer_digest
from agent_wait.core._errors import AnnounceFailed
from agent_wait.core._memory import MemoryAnnounce
from agent_wait.core._models import ANSWER_REFUSED_TYPE, Answer, WaitEnvelope
from agent_wait.core._trust import AnswerTrust
from agent_wait.core.hookspecs import hookimpl
from agent_wait.testing._common import (
    KIT_POLICY,
    NOW,
    clock,
    registered_plugin,
)

_TURNS: list[dict[str, Any]] = [
    {"order_id": "order-4471", "amount": 41000},
    {"order_id": "order-4472", "amount": 52000},
]


class _Down(BaseAnnounce):
    """A transport that refuses every delivery."""

    def deliver(self, envelope: WaitEnvelope) -> None:
        raise ConnectionError("transport down")


def _reply(envelope: WaitEnvelope, answer: Any) -> dict[str, Any]:
    return {"thread_id": envelope.thread_id, "question_id": envelope.question_id, "answer": answer}


class _AnswerLog:
    def __init__(self) -> None:
        self.seen: list[tuple[str, Outcome]] = []

    @hookimpl
    def answer_handled(self, answer: Answer, handled: Handled) -> None:
        self.seen.append((answer.question_id, handled.outcome))


class HostContract:
    """The behaviour every framework's ``handle_message`` must have. Subclass it as ``Test<Host>``.

    The kit drives a whole thread through the framework's real runtime (an offline model): the
    function under test is ``issue_refund(order_id: str, amount: int)`` under the framework's
    ``@wait(policy)`` (a three-day timeout), and the model calls it once per turn with two different argument sets, so the
    thread parks twice. The subclass supplies:

    - :meth:`wait`: the framework's ``wait`` decorator (``wait = staticmethod(wait)``).
    - :meth:`define`: ``issue_refund`` with the framework's injected parameter.
    - :meth:`build`: the framework's app (a graph, an agent and its history store, an agent
      factory) on fresh storage, whose scripted model makes the calls of ``turns`` one per turn.
    - :meth:`handle` and :meth:`ahandle`: the framework's ``handle_message`` /
      ``ahandle_message`` on that app.
    - :attr:`start_input`: a start message's ``input`` the app accepts.
    - :attr:`invalid_answer`: an answer the framework refuses before anything is saved.

    A fresh instance runs each test. Each test's docstring says what a failure means.
    """

    start_input: ClassVar[Any] = "refund"
    """The ``input`` of the start messages the kit sends."""

    invalid_answer: ClassVar[Any] = {"action": "approve", "args": {"amonut": 1}}
    """An answer :meth:`handle` must refuse as ``invalid_answer`` (default: an edit naming an
    argument ``issue_refund`` does not have)."""

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        """The framework's ``wait`` decorator (abstract; ``wait = staticmethod(wait)``)."""
        raise NotImplementedError(f"{type(self).__name__} must set wait = staticmethod(wait)")

    def define(self, decorator: Callable[[Any], Any], body: Callable[..., str]) -> Any:
        """Define ``issue_refund(order_id: str, amount: int, <injected>)``, decorated (abstract).

        It returns ``body(order_id, amount)`` and is decorated with ``decorator``; return the
        decorated function (not yet a tool).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement define()")

    def build(self, function: Any, turns: list[dict[str, Any]]) -> Any:
        """The framework's app on fresh storage (abstract).

        Register ``function`` as a tool; script an offline model that, after each user prompt,
        calls it with ``turns[0]``, then (once that call returned) with ``turns[1]``, and so on,
        one call per model turn, then ends with a text answer.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    def handle(self, app: Any, message: Any, announce: Any, **options: Any) -> Handled:
        """The framework's ``handle_message`` on ``app`` (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement handle()")

    async def ahandle(self, app: Any, message: Any, announce: Any, **options: Any) -> Handled:
        """The framework's ``ahandle_message`` on ``app`` (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement ahandle()")

    # The kit's side.

    @pytest.fixture(autouse=True)
    def _host_runs(self) -> None:
        self.runs: list[tuple[str, int]] = []
        self.inbox = MemoryAnnounce()
        self.thread_id = f"contract-{ULID()}"

    def _body(self, order_id: str, amount: int) -> str:
        self.runs.append((order_id, amount))
        return f"refunded {amount} on {order_id}"

    def _app(self) -> Any:
        function = self.define(self.wait(KIT_POLICY), self._body)
        return self.build(function, [dict(t) for t in _TURNS])

    def _start(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "input": self.start_input}

    def _parked(self, app: Any) -> WaitEnvelope:
        started = self.handle(app, self._start(), self.inbox, clock=clock)
        assert started.outcome is Outcome.STARTED, f"a start message was {started.outcome}"
        assert self.runs == [], f"the body ran before an answer: {self.runs}"
        assert len(started.question_ids) == 1, f"one call parked {started.question_ids}"
        return self.inbox.envelopes[-1]

    def _resumed(self, app: Any, envelope: WaitEnvelope) -> WaitEnvelope:
        handled = self.handle(app, _reply(envelope, {"action": "approve"}), self.inbox)
        assert handled.outcome is Outcome.RESUMED, f"{handled.outcome}: {handled.detail}"
        assert len(handled.question_ids) == 1, "the resumed run did not park on the next call"
        return self.inbox.envelopes[-1]

    def test_start_parks_and_publishes_the_question(self) -> None:
        """If this fails, a start message does not run the agent or publish what it parked on.

        ``handle_message`` must run the agent (``started``), and publish one envelope for the
        parked call under the message's thread id, with ``{"function", "args"}`` as the
        question and the result in ``Handled.result``; the body must not run.
        """
        envelope = self._parked(self._app())
        assert envelope.thread_id == self.thread_id
        assert envelope.question == {"function": "issue_refund", "args": _TURNS[0]}
        assert envelope.expires_at == "2026-09-14T09:00:00Z", "clock= did not reach publish"

    def test_answer_resumes_once_and_the_last_one_finishes(self) -> None:
        """If this fails, an answer does not resume the framework exactly once.

        An answer for the pending question must resume it (``resumed``): the body runs once
        with the published arguments, and the run's next question is published; the last
        answer finishes the run and publishes nothing.
        """
        app = self._app()
        second = self._resumed(app, self._parked(app))
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"
        assert second.question == {"function": "issue_refund", "args": _TURNS[1]}
        done = self.handle(app, _reply(second, {"action": "approve"}), self.inbox)
        assert done.outcome is Outcome.RESUMED, f"{done.outcome}: {done.detail}"
        assert done.ran
        assert not done.parked, "the finished run published a question"
        assert done.result is not None, "Handled.result is not the run's result"
        assert self.runs == [("order-4471", 41000), ("order-4472", 52000)], f"runs: {self.runs}"

    def test_redelivered_start_republishes_the_same_question(self) -> None:
        """If this fails, a start message redelivered to a parked thread runs the agent again.

        While the thread is parked, a start message must run nothing (``republished``,
        ``result`` None) and publish the pending question again under its same
        ``question_id`` (with a new ``event_id``); the answer to it still resumes.
        """
        app = self._app()
        envelope = self._parked(app)
        again = self.handle(app, self._start(), self.inbox)
        assert again.outcome is Outcome.REPUBLISHED, f"{again.outcome}: {again.detail}"
        assert (again.ran, again.result) == (False, None)
        assert again.question_ids == [envelope.question_id], "republished under another id"
        assert self.inbox.envelopes[-1].event_id != envelope.event_id
        assert again.detail, "Handled.detail does not say why nothing ran"
        self._resumed(app, envelope)
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"

    def test_duplicate_answer_runs_nothing_and_republishes_what_is_pending(self) -> None:
        """If this fails, an answer to a question already answered runs something.

        A second answer (same or different) must run nothing (``duplicate``) and publish
        again what the thread waits on now; once the thread finished, a duplicate publishes
        nothing. The first answer stands.
        """
        app = self._app()
        first = self._parked(app)
        second = self._resumed(app, first)
        for answer in ({"action": "approve"}, {"action": "reject", "reason": "changed my mind"}):
            duplicate = self.handle(app, _reply(first, answer), self.inbox)
            assert duplicate.outcome is Outcome.DUPLICATE, f"{duplicate.outcome}"
            assert duplicate.result is None
            assert duplicate.question_ids == [second.question_id], (
                "a duplicate did not republish the question the thread waits on"
            )
        self.handle(app, _reply(second, {"action": "approve"}), self.inbox)
        late = self.handle(app, _reply(second, {"action": "approve"}), self.inbox)
        assert late.outcome is Outcome.DUPLICATE, f"{late.outcome}"
        assert late.report.envelopes == (), "a finished thread republished something"
        assert self.runs == [("order-4471", 41000), ("order-4472", 52000)], f"runs: {self.runs}"

    def test_unknown_question_runs_nothing(self) -> None:
        """If this fails, an answer for a question the thread never asked reaches the framework.

        It must run nothing and publish nothing (``unknown_question``), on a parked thread and
        on a thread that never ran; the pending question still resumes.
        """
        app = self._app()
        envelope = self._parked(app)
        for thread_id in (self.thread_id, f"contract-{ULID()}"):
            message = {"thread_id": thread_id, "question_id": uuid.uuid4().hex, "answer": 1}
            unknown = self.handle(app, message, self.inbox)
            assert unknown.outcome is Outcome.UNKNOWN_QUESTION, f"{unknown.outcome}"
            assert unknown.report.envelopes == ()
            assert unknown.detail, "Handled.detail does not say why nothing ran"
        self._resumed(app, envelope)
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"

    def test_invalid_answer_is_refused_before_anything_runs(self) -> None:
        """If this fails, an answer the framework cannot take is saved or run.

        :attr:`invalid_answer` must be refused (``invalid_answer``, a ``detail`` naming the
        problem) with nothing run or published, and the question stays pending: a good answer
        then resumes it.
        """
        app = self._app()
        envelope = self._parked(app)
        refused = self.handle(app, _reply(envelope, self.invalid_answer), self.inbox)
        assert refused.outcome is Outcome.INVALID_ANSWER, f"{refused.outcome}: {refused.detail}"
        assert refused.detail, "Handled.detail does not name the problem"
        assert (refused.result, refused.report.envelopes) == (None, ())
        self._resumed(app, envelope)
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"

    def test_a_refused_answer_is_announced_as_answer_refused(self) -> None:
        """If this fails, a question store never hears that the host refused an answer.

        The store recorded the answer and closed the question before the host refused it: for
        :attr:`invalid_answer`, the announcers that opted in to ``wait.answer_refused`` must get
        one event (the thread, the question, ``outcome`` ``invalid_answer``, the message's
        ``answered_by``, the ``detail`` as ``reason`` and the answer's digest), and
        ``Handled.refused`` must name the question. A good answer then announces none.
        """
        app = self._app()
        envelope = self._parked(app)
        audit = MemoryAnnounce().with_lifecycle_events(ANSWER_REFUSED_TYPE)
        bad = {**_reply(envelope, self.invalid_answer), "answered_by": "alice"}
        refused = self.handle(app, bad, [self.inbox, audit])
        assert refused.outcome is Outcome.INVALID_ANSWER, f"{refused.outcome}: {refused.detail}"
        assert refused.refused == (envelope.question_id,), f"refused: {refused.refused}"
        assert [e.ok for e in refused.events] == [True], f"events: {refused.events}"
        [event] = audit.events
        assert (event.type, event.thread_id, event.question_id) == (
            ANSWER_REFUSED_TYPE,
            envelope.thread_id,
            envelope.question_id,
        )
        assert (event.outcome, event.by) == ("invalid_answer", "alice")
        assert refused.detail is not None
        assert event.reason is not None
        assert refused.detail.startswith(event.reason.removesuffix("…")), "reason is not detail"
        assert event.answer_digest == answer_digest(self.invalid_answer)
        resumed = self.handle(app, _reply(envelope, {"action": "approve"}), [self.inbox, audit])
        assert resumed.outcome is Outcome.RESUMED, f"{resumed.outcome}: {resumed.detail}"
        assert (resumed.refused, len(audit.events)) == ((), 1)

    def test_strict_publish_failure_raises_and_the_redelivery_publishes(self) -> None:
        """If this fails, a question whose strict publish failed can be lost or asked twice.

        With ``strict=True`` a failed delivery must raise ``AnnounceFailed`` after the run was
        saved (so the host leaves the message unacknowledged), and the redelivered message
        must publish the same question without running anything: a start as ``republished``,
        an answer as ``duplicate``.
        """
        app = self._app()
        with pytest.raises(AnnounceFailed) as failed:
            self.handle(app, self._start(), _Down(), strict=True)
        [asked] = failed.value.report.question_ids
        again = self.handle(app, self._start(), self.inbox, strict=True)
        assert again.outcome is Outcome.REPUBLISHED, f"{again.outcome}: {again.detail}"
        assert again.question_ids == [asked]
        with pytest.raises(AnnounceFailed) as failed:
            self.handle(
                app, _reply(self.inbox.envelopes[-1], {"action": "approve"}), _Down(), strict=True
            )
        [following] = failed.value.report.question_ids
        assert self.runs == [("order-4471", 41000)], "the resume was not kept"
        redelivered = self.handle(
            app, _reply(self.inbox.envelopes[-1], {"action": "approve"}), self.inbox, strict=True
        )
        assert redelivered.outcome is Outcome.DUPLICATE, f"{redelivered.outcome}"
        assert redelivered.question_ids == [following], "the next question was not published"
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"

    def test_every_answer_reaches_the_answer_handled_hook(self) -> None:
        """If this fails, the framework's host does not run core's host state machine.

        Each answer's outcome must reach ``answer_handled`` plugins once; start messages do
        not.
        """
        log = _AnswerLog()
        with registered_plugin(log, "contract-answer-log"):
            app = self._app()
            first = self._parked(app)
            self.handle(app, _reply(first, self.invalid_answer), self.inbox)
            second = self._resumed(app, first)
            self.handle(app, _reply(first, {"action": "approve"}), self.inbox)
            unknown = {"thread_id": self.thread_id, "question_id": uuid.uuid4().hex, "answer": 1}
            self.handle(app, unknown, self.inbox)
        assert log.seen == [
            (first.question_id, Outcome.INVALID_ANSWER),
            (first.question_id, Outcome.RESUMED),
            (first.question_id, Outcome.DUPLICATE),
            (unknown["question_id"], Outcome.UNKNOWN_QUESTION),
        ], f"seen: {log.seen}"
        assert second.question_id != first.question_id

    def test_async_host_takes_the_same_decisions(self) -> None:
        """If this fails, ``ahandle_message`` decides differently from ``handle_message``.

        The async host must start, republish, refuse an unknown question, resume, report a
        duplicate and finish exactly like the sync one.
        """
        app = self._app()

        async def thread() -> list[Outcome]:
            start = self._start()
            outcomes = [(await self.ahandle(app, start, self.inbox)).outcome]
            outcomes.append((await self.ahandle(app, start, self.inbox)).outcome)
            first = self.inbox.envelopes[-1]
            unknown = {"thread_id": self.thread_id, "question_id": uuid.uuid4().hex, "answer": 1}
            outcomes.append((await self.ahandle(app, unknown, self.inbox)).outcome)
            approve = _reply(first, {"action": "approve"})
            outcomes.append((await self.ahandle(app, approve, self.inbox)).outcome)
            outcomes.append((await self.ahandle(app, approve, self.inbox)).outcome)
            second = _reply(self.inbox.envelopes[-1], {"action": "approve"})
            outcomes.append((await self.ahandle(app, second, self.inbox)).outcome)
            return outcomes

        assert asyncio.run(thread()) == [
            Outcome.STARTED,
            Outcome.REPUBLISHED,
            Outcome.UNKNOWN_QUESTION,
            Outcome.RESUMED,
            Outcome.DUPLICATE,
            Outcome.RESUMED,
        ]
        assert self.runs == [("order-4471", 41000), ("order-4472", 52000)], f"runs: {self.runs}"
        assert [e.question_id for e in self.inbox.envelopes][:2] == [
            self.inbox.envelopes[0].question_id
        ] * 2

    def test_signed_replies_admit_only_their_own_token(self) -> None:
        """If this fails, a host with answer secrets runs an answer it did not sign for.

        With ``trust=AnswerTrust(secrets)`` every ``reply_with`` must carry a ``token``, and the
        reply copied verbatim must resume. An answer without a token, with the token of another
        question, or signed with a key no longer listed must be ``unauthorized``: nothing runs
        and the question stays answerable. A key listed second still verifies (rotation).
        """
        app = self._app()
        new, old = "contract-new-secret-".ljust(40, "n"), "contract-old-secret-".ljust(40, "o")
        rotated, retired = AnswerTrust([new, old]), AnswerTrust([new])
        self.handle(app, self._start(), self.inbox, clock=clock, trust=AnswerTrust([old]))
        envelope = self.inbox.envelopes[-1]
        copied: dict[str, Any] = {
            **envelope.reply_with.model_dump(mode="json"),
            "answer": {"action": "approve"},
        }
        assert "token" in copied, "reply_with carries no token: trust= did not reach publish"
        for bad, trust in (
            (_reply(envelope, {"action": "approve"}), rotated),
            ({**copied, "question_id": uuid.uuid4().hex}, rotated),
            (copied, retired),
        ):
            handled = self.handle(app, bad, self.inbox, trust=trust)
            assert handled.outcome is Outcome.UNAUTHORIZED, f"{handled.outcome}: {handled.detail}"
        assert self.runs == [], f"an unauthorized answer ran the body: {self.runs}"
        resumed = self.handle(app, copied, self.inbox, trust=rotated)
        assert resumed.outcome is Outcome.RESUMED, f"{resumed.outcome}: {resumed.detail}"
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"
        token = self.inbox.envelopes[-1].reply_with.model_dump()["token"]
        assert token.split(".")[1] != copied["token"].split(".")[1], "the first secret must sign"

    def test_late_and_disallowed_answers_by_policy(self) -> None:
        """If this fails, a host's expiry policy or strict ``allowed_actions`` is not enforced.

        A host with ``AnswerTrust(expired="refuse", strict_actions=True)`` must put the
        question's ``expires_at`` into ``reply_with``; a reply copied from it after that time
        must be ``expired``, one whose action is not allowed ``invalid_answer``, both running
        nothing. With ``expired="default"`` the late answer is replaced by the question's
        ``default`` (a rejection: the body does not run).
        """
        app = self._app()
        refuse = AnswerTrust(expired="refuse", strict_actions=True)
        self.handle(app, self._start(), self.inbox, clock=clock, trust=refuse)
        reply_with = self.inbox.envelopes[-1].reply_with.model_dump(mode="json")
        assert reply_with.get("expires_at") == "2026-09-14T09:00:00Z", (
            f"reply_with does not carry expires_at: {reply_with}"
        )
        late = NOW + timedelta(days=4)
        approve = {**reply_with, "answer": {"action": "approve"}}
        expired = self.handle(app, approve, self.inbox, trust=refuse, clock=lambda: late)
        assert expired.outcome is Outcome.EXPIRED, f"{expired.outcome}: {expired.detail}"
        maybe = {**reply_with, "answer": {"action": "maybe"}}
        invalid = self.handle(app, maybe, self.inbox, trust=refuse, clock=clock)
        assert invalid.outcome is Outcome.INVALID_ANSWER, f"{invalid.outcome}: {invalid.detail}"
        assert self.runs == [], f"a refused answer ran the body: {self.runs}"
        default = AnswerTrust(expired="default")
        handled = self.handle(app, approve, self.inbox, trust=default, clock=lambda: late)
        assert handled.outcome is Outcome.RESUMED, f"{handled.outcome}: {handled.detail}"
        assert self.runs == [], f"the late approval ran instead of the default: {self.runs}"
