"""Conformance kit for framework adapters (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import pytest
from ulid import ULID

from agent_wait.core._announce import PublishReport
from agent_wait.core._canonical import derive_question_id
from agent_wait.core._memory import MemoryAnnounce
from agent_wait.core._models import Question, Source, WaitEnvelope
from agent_wait.testing._common import (
    KIT_POLICY,
    clock,
)

# The envelope's fields, in the order docs/message-formats.md gives them.
_ENVELOPE_FIELDS = [
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
# Fields that follow those, each present only when the question has it.
_OPTIONAL_FIELDS = [n for n, f in WaitEnvelope.model_fields.items() if f.exclude_if is not None]
_ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
_ARGS: dict[str, Any] = {"order_id": "order-4471", "amount": 41000}


def _same(seen: Any, expected: Any) -> bool:
    # Frameworks hand a tool's result to the model as text: a JSON object arrives as its JSON.
    if seen == expected:
        return True
    if isinstance(seen, str):
        try:
            return json.loads(seen) == expected
        except ValueError:
            return False
    return False


class AdapterContract:
    """The behaviour every framework's ``@wait`` must have. Subclass it as ``Test<Framework>``.

    The kit defines the function under test, ``issue_refund(order_id: str, amount: int)``, and
    the policy; the subclass supplies the framework pieces:

    - :meth:`wait`, :meth:`questions_in`, :meth:`publish_interrupts`: the framework package's
      own functions (assign them with ``staticmethod(...)``).
    - :attr:`hidden_parameter`: the name of the parameter the framework injects (run context,
      tool context, tool call id) that :meth:`define` gives the function.
    - :meth:`define`, :meth:`start`, :meth:`resume`, :meth:`returned`: define the function,
      run it once through the framework's real runtime (an offline model), resume the parked
      run with an answer, and read back what the caller (a node, or the model as the tool
      result) received.

    A fresh instance runs each test, so :meth:`start` may keep the run's agent or graph on
    ``self`` for :meth:`resume`.
    """

    hidden_parameter: str = ""
    """The injected parameter :meth:`define` adds (never published)."""

    def wait(self, *args: Any, **kwargs: Any) -> Any:
        """The framework's ``wait`` decorator (abstract; ``wait = staticmethod(wait)``)."""
        raise NotImplementedError(f"{type(self).__name__} must set wait = staticmethod(wait)")

    def questions_in(self, result: Any) -> list[Question]:
        """The framework's ``questions_in`` (abstract)."""
        raise NotImplementedError(
            f"{type(self).__name__} must set questions_in = staticmethod(questions_in)"
        )

    def publish_interrupts(self, result: Any, thread_id: str, *args: Any, **kwargs: Any) -> Any:
        """The framework's ``publish_interrupts`` (abstract)."""
        raise NotImplementedError(
            f"{type(self).__name__} must set publish_interrupts = staticmethod(publish_interrupts)"
        )

    def define(
        self, decorator: Callable[[Any], Any], body: Callable[..., str], *, decision: bool
    ) -> Any:
        """Define ``issue_refund`` with the framework's injected parameter, decorated (abstract).

        The function is ``issue_refund(order_id: str, amount: int, <hidden_parameter>)``, plus
        ``decision: Any = None`` when ``decision`` is true; it returns
        ``body(order_id, amount)`` (``body(order_id, amount, decision)`` with a decision), and
        is decorated with ``decorator``. Return the decorated function (not yet a tool).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement define()")

    def start(self, function: Any, args: dict[str, Any], thread_id: str) -> Any:
        """Run the framework once on ``thread_id``, calling ``function(**args)`` once (abstract).

        Register ``function`` as the framework's tool (or call it from a node), script an
        offline model to call it with ``args``, run, and return the run's result: parked when
        the call parks, finished otherwise.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement start()")

    def resume(self, thread_id: str, parked: Any, question: Question, answer: Any) -> Any:
        """Resume the parked run ``parked`` with ``answer`` to ``question``; return the result.

        Abstract. Send the answer the way the framework's host would (e.g. LangGraph's
        ``Command(resume=...)``, Pydantic AI's deferred tool results, Strands' interrupt
        responses) and let the run finish.
        """
        raise NotImplementedError(f"{type(self).__name__} must implement resume()")

    def returned(self, result: Any) -> Any:
        """What the caller received from the call in a finished run (abstract).

        The value a node got back, or the tool result the model saw (text is fine: the kit
        compares JSON text with the object it encodes).
        """
        raise NotImplementedError(f"{type(self).__name__} must implement returned()")

    # The kit's side: the body, what it ran with, and the runs.

    @pytest.fixture(autouse=True)
    def _adapter_runs(self) -> None:
        self.runs: list[tuple[Any, ...]] = []

    def _body(self, order_id: str, amount: int, *decision: Any) -> str:
        self.runs.append((order_id, amount, *decision))
        return f"refunded {amount} on {order_id}"

    def _function(self, *args: Any, decision: bool = False, **options: Any) -> Any:
        function = self.define(self.wait(*args, **options), self._body, decision=decision)
        assert self.hidden_parameter, (
            f"{type(self).__name__} must set hidden_parameter to the parameter its framework "
            "injects (the kit checks it is never published)"
        )
        state = getattr(function, "__agent_wait__", None)
        assert state is not None, "define() did not return the function the decorator built"
        params = inspect.signature(state.function).parameters
        assert self.hidden_parameter in params, (
            f"define() must give the function the injected parameter {self.hidden_parameter!r}; "
            f"it has {list(params)}"
        )
        return function

    def _thread(self) -> str:
        return f"contract-{ULID()}"

    def _park(self, function: Any, thread_id: str) -> tuple[Any, Question]:
        parked = self.start(function, dict(_ARGS), thread_id)
        questions = self.questions_in(parked)
        assert len(questions) == 1, f"one parked call gave {len(questions)} questions"
        assert self.runs == [], f"the body ran before an answer: {self.runs}"
        return parked, questions[0]

    def _finish(self, function: Any, answer: Any) -> Any:
        thread_id = self._thread()
        parked, question = self._park(function, thread_id)
        done = self.resume(thread_id, parked, question, answer)
        assert self.questions_in(done) == [], "the resumed run is still parked"
        return done

    def test_parked_call_asks_one_question_without_hidden_parameters(self) -> None:
        """If this fails, a parked call does not publish ``{"function", "args"}`` as its question.

        One ``@wait`` call that parks must give exactly one question from ``questions_in``;
        its ``question`` is ``{"function": name, "args": {...}}`` with the call's arguments
        and without the parameters the framework injects (``hidden_parameters`` of the
        adapter must name them), and the body must not run before an answer.
        """
        _, question = self._park(self._function(KIT_POLICY), self._thread())
        assert question.question == {"function": "issue_refund", "args": _ARGS}, (
            f"question: {question.question!r}"
        )
        assert question.question_id, "the question has no question_id"

    def test_policy_and_source_ride_to_the_envelope(self) -> None:
        """If this fails, the ``@wait`` policy or ``source`` is lost between park and publish.

        The adapter must park on ``call.payload`` (policy and source included) and
        ``questions_in`` must read it back with ``question_from_value``.
        """
        inbox = MemoryAnnounce()
        parked, question = self._park(self._function(KIT_POLICY), self._thread())
        assert question.policy == KIT_POLICY, f"policy: {question.policy!r}"
        assert question.source == Source(function="issue_refund"), f"source: {question.source!r}"
        report = self.publish_interrupts(parked, "order-4471", inbox, clock=clock)
        [envelope] = inbox.envelopes
        assert report.ok
        assert envelope.allowed_actions == ["approve", "reject", "escalate"]
        assert envelope.expires_at == "2026-09-14T09:00:00Z"
        assert envelope.default == {"action": "reject", "reason": "no response within P3D"}
        assert envelope.answer_ttl == "PT15M"
        assert envelope.tags == {"approver_group": "finance", "region": "eu"}
        assert envelope.correlation is not None
        assert envelope.correlation.model_dump() == {"provider": "contract", "id": "re_4471"}
        assert envelope.source == Source(function="issue_refund")

    def test_publish_interrupts_envelope_follows_the_contract(self) -> None:
        """If this fails, ``publish_interrupts`` does not publish the ``wait.created`` envelope.

        The envelope's fields must be the contract's, in its order, with ``question_id`` the one
        ``questions_in`` reports and ``reply_with`` addressed to it; a finished run publishes
        nothing.
        """
        inbox = MemoryAnnounce()
        thread_id = self._thread()
        parked, question = self._park(self._function(KIT_POLICY), thread_id)
        reply_to = {"kind": "queue", "url": "https://example.invalid/answers"}
        report = self.publish_interrupts(parked, thread_id, inbox, reply_to=reply_to, clock=clock)
        assert isinstance(report, PublishReport), f"returned {type(report).__name__}"
        assert report.ok, f"deliveries failed: {[d.error for d in report.failures]}"
        assert report.question_ids == [question.question_id]
        [envelope] = inbox.envelopes
        data = json.loads(envelope.to_json())
        optional = [name for name in _OPTIONAL_FIELDS if name in data]
        assert list(data) == _ENVELOPE_FIELDS + optional, f"fields: {list(data)}"
        assert data["type"] == "wait.created"
        assert _ULID.match(data["event_id"]), f"event_id: {data['event_id']!r}"
        assert data["thread_id"] == thread_id
        assert data["question_id"] == question.question_id
        assert data["question"] == {"function": "issue_refund", "args": _ARGS}
        assert data["reply_to"] == reply_to
        assert data["reply_with"] == {
            "thread_id": thread_id,
            "question_id": question.question_id,
            "answer": None,
        }
        assert (
            envelope.dedupe_key
            == f"wait.created:{quote(thread_id, safe='')}:{question.question_id}"
        )
        done = self.resume(thread_id, parked, question, {"action": "approve"})
        assert self.publish_interrupts(done, thread_id, inbox).envelopes == ()
        assert len(inbox.envelopes) == 1

    def test_approve_runs_the_body_once_with_the_published_args(self) -> None:
        """If this fails, ``{"action": "approve"}`` does not run the body exactly once.

        On resume the adapter's ``park`` must return the answer verbatim (no re-ask), the body
        must run once with the arguments that were published, and its result must reach the
        caller.
        """
        done = self._finish(self._function(KIT_POLICY), {"action": "approve"})
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, "refunded 41000 on order-4471"), f"the caller received {seen!r}"

    def test_approve_with_args_runs_the_body_with_the_edited_args(self) -> None:
        """If this fails, ``{"action": "approve", "args": {...}}`` does not edit the call.

        The edited arguments replace the published ones (the others stay) before the body
        runs, once.
        """
        answer = {"action": "approve", "args": {"amount": 500}}
        done = self._finish(self._function(KIT_POLICY), answer)
        assert self.runs == [("order-4471", 500)], f"runs: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, "refunded 500 on order-4471"), f"the caller received {seen!r}"

    @pytest.mark.parametrize(
        "answer",
        [
            {"action": "reject", "reason": "over budget"},
            {"action": "escalate", "to": "cfo", "note": "Rückfrage ✓"},
        ],
        ids=["reject", "escalate"],
    )
    def test_any_other_answer_skips_the_body_and_is_returned(self, answer: Any) -> None:
        """If this fails, an answer other than approve runs the body or is not what the caller sees.

        Anything but ``{"action": "approve", ...}`` (without a decision parameter) must not
        run the body; the answer itself is returned in its place (the model sees it as the
        tool result, e.g. as JSON text).
        """
        done = self._finish(self._function(KIT_POLICY), answer)
        assert self.runs == [], f"the body ran on {answer!r}: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, answer), f"the caller received {seen!r}, not the answer {answer!r}"

    def test_decision_parameter_receives_the_whole_answer(self) -> None:
        """If this fails, a ``decision`` parameter does not get the whole answer.

        A function with a decision parameter always runs on resume, once, and receives the
        answer verbatim there; the parameter is never published.
        """
        function = self._function(KIT_POLICY, decision=True)
        thread_id = self._thread()
        parked, question = self._park(function, thread_id)
        assert question.question == {"function": "issue_refund", "args": _ARGS}, (
            f"question: {question.question!r}"
        )
        answer = {"action": "reject", "why": "change freeze", "ticket": 7}
        done = self.resume(thread_id, parked, question, answer)
        assert self.runs == [("order-4471", 41000, answer)], f"runs: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, "refunded 41000 on order-4471"), f"the caller received {seen!r}"

    def test_when_false_runs_without_parking(self) -> None:
        """If this fails, ``when=`` does not decide whether a call asks.

        A predicate that returns False (called with the published arguments) must run the body
        at once without parking; one that returns True must park as usual.
        """

        def large(order_id: str, amount: int) -> bool:
            return amount > 50000

        function = self._function(KIT_POLICY, when=large)
        done = self.start(function, {"order_id": "order-7", "amount": 100}, self._thread())
        assert self.questions_in(done) == [], "a call with when=False parked"
        assert self.runs == [("order-7", 100)], f"runs: {self.runs}"
        assert _same(self.returned(done), "refunded 100 on order-7")
        parked = self.start(function, {"order_id": "order-8", "amount": 90000}, self._thread())
        assert len(self.questions_in(parked)) == 1, "a call with when=True did not park"
        assert self.runs == [("order-7", 100)], f"runs: {self.runs}"

    def test_async_mode_returns_pending_and_publishes_once(self) -> None:
        """If this fails, ``mode="async"`` does not publish its own question and return pending.

        The call must publish once (to the given announcer) under
        ``derive_question_id(thread_id, function, args)`` (``thread_id`` from the adapter's
        ``thread_id``), return ``{"status": "pending_approval", "question_id", "function"}``
        without running the body, and leave nothing parked.
        """
        inbox = MemoryAnnounce()
        thread_id = self._thread()
        function = self._function(KIT_POLICY, mode="async", announce=inbox, clock=clock)
        done = self.start(function, dict(_ARGS), thread_id)
        expected = derive_question_id(thread_id, "issue_refund", _ARGS)
        assert self.runs == [], f"the body ran in async mode: {self.runs}"
        assert self.questions_in(done) == [], "an async-mode call parked the run"
        pending = {
            "status": "pending_approval",
            "question_id": expected,
            "function": "issue_refund",
        }
        seen = self.returned(done)
        assert _same(seen, pending), f"the caller received {seen!r}"
        [envelope] = inbox.envelopes
        assert envelope.question_id == expected
        assert envelope.thread_id == thread_id
        assert envelope.question == {"function": "issue_refund", "args": _ARGS}
        assert envelope.expires_at == "2026-09-14T09:00:00Z"
        assert envelope.tags == {"approver_group": "finance", "region": "eu"}
