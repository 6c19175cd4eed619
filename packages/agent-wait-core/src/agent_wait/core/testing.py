"""Conformance kits for announcers, framework adapters and framework hosts (needs pytest).

Subclass :class:`AnnouncerContract` in a test module, name the subclass ``Test…`` and build
your announcer; pytest collects the inherited tests::

    from agent_wait.core.testing import AnnouncerContract
    from my_transport import MyAnnounce

    class TestMyAnnounce(AnnouncerContract):
        def make_announcer(self):
            return MyAnnounce(url="http://127.0.0.1:8080/hook")

        def received(self, announcer):  # optional: read back what the transport got
            return [json.loads(body) for body in read_all_bodies()]

Override :meth:`AnnouncerContract.make_failing_announcer` to also check that a broken
transport is reported, not raised.

Subclass :class:`AdapterContract` to check a framework package built on
:func:`agent_wait.core.adapter.make_wait` with the framework's real runtime (an offline model)::

    from agent_wait.core.testing import AdapterContract
    from my_framework_wait import publish_interrupts, questions_in, wait

    class TestMyAdapter(AdapterContract):
        wait = staticmethod(wait)
        questions_in = staticmethod(questions_in)
        publish_interrupts = staticmethod(publish_interrupts)
        hidden_parameter = "ctx"

        def define(self, decorator, body, *, decision): ...  # issue_refund(order_id, amount, ctx)
        def start(self, function, args, thread_id): ...  # a run whose model calls it once
        def resume(self, thread_id, parked, question, answer): ...
        def returned(self, result): ...  # what the caller/model received from the call

Subclass :class:`HostContract` to check a framework's ``handle_message`` (built on
:mod:`agent_wait.core.host`) through the same kind of real run::

    from agent_wait.core.testing import HostContract
    from my_framework_wait import ahandle_message, handle_message, wait

    class TestMyHost(HostContract):
        wait = staticmethod(wait)

        def define(self, decorator, body): ...  # issue_refund(order_id, amount, ctx)
        def build(self, function, turns): ...  # the app; its model calls turns[i], one a turn
        def handle(self, app, message, announce, **options): ...  # handle_message(app, ...)
        async def ahandle(self, app, message, announce, **options): ...

Each test's docstring says what a failure means.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import uuid
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from typing import Any, ClassVar
from urllib.parse import quote

try:
    import pytest
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("agent_wait.core.testing needs pytest: pip install pytest") from error

from ulid import ULID

from agent_wait.core._announce import BaseAnnounce, PublishReport, Receipt
from agent_wait.core._canonical import derive_question_id
from agent_wait.core._errors import AnnounceFailed
from agent_wait.core._host import Handled, Outcome
from agent_wait.core._kit_entry import EntryContract
from agent_wait.core._kit_store import StoreContract
from agent_wait.core._memory import MemoryAnnounce
from agent_wait.core._models import Answer, Question, Source, WaitEnvelope
from agent_wait.core._plugins import registry
from agent_wait.core._policy import WaitPolicy
from agent_wait.core._publish import apublish, publish
from agent_wait.core._trust import AnswerTrust
from agent_wait.core.hookspecs import hookimpl

__all__ = [
    "AdapterContract",
    "AnnouncerContract",
    "EntryContract",
    "HostContract",
    "StoreContract",
    "registered_plugin",
    "sample_questions",
]

_REPLY_TO = {"kind": "queue", "url": "https://example.invalid/answers"}


def sample_questions(count: int, *, prefix: str | None = None) -> list[Question]:
    """Questions exercising every envelope field (unicode, nested args, tags, correlation).

    Question ids are unique per call unless ``prefix`` is given, so tests against a shared,
    long-lived transport never see each other's questions.
    """
    base = prefix or f"contract-{uuid.uuid4().hex[:12]}"
    questions: list[Question] = []
    for index in range(count):
        policy = WaitPolicy.model_validate(
            {
                "timeout": "P3D",
                "default": {"action": "reject", "reason": "no response within P3D"},
                "answer_ttl": "PT15M",
                "tags": {"approver_group": "finance", "priority": str(index)},
                "correlation": {"provider": "contract", "id": f"job-{index}"}
                if index % 2
                else None,
            }
        )
        questions.append(
            Question(
                question_id=f"{base}-{index}",
                question={
                    "function": "issue_refund",
                    "args": {
                        "order_id": f"order-{index}",
                        "amount": 41000 + index,
                        "note": "Rückerstattung € ✓",
                    },
                },
                policy=policy,
                source=Source(function="issue_refund"),
            )
        )
    return questions


@contextmanager
def registered_plugin(plugin: object, name: str) -> Generator[object]:
    """Register a plugin (a module or an object with ``@hookimpl`` methods) for a block.

    Example:
        ::

            with registered_plugin(MyHooks(), "my-hooks"):
                report = publish(questions, "thread-1", announce=MemoryAnnounce())
    """
    reg = registry()
    reg.register(plugin, name)
    try:
        yield plugin
    finally:
        reg.unregister(name)


class AnnouncerContract:
    """The behaviour every announcer must have. Subclass it as ``Test<YourAnnouncer>``.

    Override :meth:`make_announcer` (required), :meth:`received` (recommended: lets the kit
    check that what arrived equals the envelope, field for field) and
    :meth:`make_failing_announcer` (recommended: lets the kit check failure reporting).
    """

    def make_announcer(self) -> BaseAnnounce:
        """Build a fresh announcer connected to a working transport (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_announcer()")

    def make_failing_announcer(self) -> BaseAnnounce | None:
        """Build an announcer whose transport fails (unreachable endpoint, missing queue, ...).

        Returns None (the default) to skip the failure tests.
        """
        return None

    def received(self, announcer: BaseAnnounce) -> list[dict[str, Any]] | None:
        """Read back every envelope body the transport holds, as parsed JSON objects.

        Read with a client of your own (the announcer may be closed by then). Returning None
        (the default) skips the body checks.
        """
        return None

    @pytest.fixture
    def contract_announcer(self) -> Iterator[BaseAnnounce]:
        """A fresh announcer, closed after the test."""
        built = self.make_announcer()
        yield built
        built.close()

    def _thread(self) -> str:
        return f"contract-thread-{ULID()}"

    def _assert_bodies(self, announcer: BaseAnnounce, envelopes: Sequence[WaitEnvelope]) -> None:
        bodies = self.received(announcer)
        if bodies is None:
            return
        by_event = {body.get("event_id"): body for body in bodies if isinstance(body, dict)}  # pyright: ignore[reportUnnecessaryIsInstance]
        for envelope in envelopes:
            assert envelope.event_id in by_event, (
                f"envelope {envelope.event_id} (question {envelope.question_id}) was reported "
                f"delivered but is not among the {len(bodies)} bodies the transport received"
            )
            assert by_event[envelope.event_id] == envelope.to_dict(), (
                "the transport received a body that differs from the envelope contract"
            )

    def _assert_all_ok(self, report: PublishReport, announcer: BaseAnnounce, count: int) -> None:
        assert report.ok, f"deliveries failed: {[d.error for d in report.failures]}"
        assert len(report.deliveries) == count
        assert {d.announcer for d in report.deliveries} == {announcer.name}

    def test_name_is_set(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, the announcer has no usable ``name``.

        Reports and logs identify announcers by name; set a class attribute ``name`` (config
        sets it to the entry-point name).
        """
        name = contract_announcer.name
        assert isinstance(name, str), f"name is {name!r}"  # pyright: ignore[reportUnnecessaryIsInstance]
        assert name.strip(), "name is empty"
        assert name != "BaseAnnounce"

    def test_options_model_matches_the_constructor(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, the announcer's options model is missing or out of step with it.

        Set a class attribute ``options_model`` to a subclass of
        :class:`agent_wait.core.AnnouncerOptions` with one field per keyword argument of the
        constructor (an ``X_env`` argument of a field ``X`` needs no field of its own), and
        validate the arguments with ``options_model.parse(self.name, {...})``. Configuration
        is checked against the model before the constructor is called, and
        ``agent-wait plugins --json`` prints its JSON Schema.
        """
        from agent_wait.core._kit_options import assert_options_model_matches
        from agent_wait.core._options import AnnouncerOptions

        assert_options_model_matches(type(contract_announcer), AnnouncerOptions)

    def test_check_connection_on_a_working_transport(
        self, contract_announcer: BaseAnnounce
    ) -> None:
        """If this fails, ``check_connection()`` raises although the transport works.

        It backs ``agent-wait config check --connect``: one cheap round trip that writes
        nothing, True when it ran, False when the announcer has no such check.
        """
        result = contract_announcer.check_connection()
        assert result is True or result is False, f"check_connection() returned {result!r}"

    def test_deliver_one(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing one question does not reach the transport intact.

        Check ``deliver()``: it must send ``envelope.to_json()`` (or an equivalent JSON
        object) and raise on failure, never return silently without sending.
        """
        [question] = sample_questions(1)
        report = publish(
            [question], self._thread(), contract_announcer, reply_to=_REPLY_TO, strict=True
        )
        self._assert_all_ok(report, contract_announcer, 1)
        self._assert_bodies(contract_announcer, report.envelopes)

    def test_deliver_many(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing several questions at once loses or corrupts some.

        Check ``deliver_many()``: it must deliver every envelope and return one outcome per
        envelope, in order (None for delivered, the exception otherwise).
        """
        questions = sample_questions(3)
        report = publish(questions, self._thread(), contract_announcer, strict=True)
        self._assert_all_ok(report, contract_announcer, 3)
        assert report.question_ids == [q.question_id for q in questions]
        self._assert_bodies(contract_announcer, report.envelopes)

    def test_deliver_many_returns_one_outcome_per_envelope(
        self, contract_announcer: BaseAnnounce
    ) -> None:
        """If this fails, ``deliver_many()`` breaks its contract.

        It must return a list as long as its input, None or a :class:`Receipt` for each
        delivered envelope (a receipt's ``message_id`` a non-empty string or None, its
        ``attempts`` at least 1 or None). ``publish`` treats any other shape as a failure of the
        whole batch.
        """
        report = publish(sample_questions(4), self._thread(), contract_announcer)
        outcomes = contract_announcer.deliver_many(list(report.envelopes))
        assert isinstance(outcomes, list), f"deliver_many returned {type(outcomes).__name__}"  # pyright: ignore[reportUnnecessaryIsInstance]
        assert len(outcomes) == 4, f"deliver_many returned {len(outcomes)} outcomes for 4 envelopes"
        for outcome in outcomes:
            assert outcome is None or isinstance(outcome, Receipt), f"outcomes: {outcomes!r}"
            if isinstance(outcome, Receipt):
                assert outcome.message_id is None or (
                    isinstance(outcome.message_id, str) and outcome.message_id  # pyright: ignore[reportUnnecessaryIsInstance]
                ), f"receipt message_id: {outcome.message_id!r}"
                assert outcome.attempts is None or outcome.attempts >= 1, f"receipt: {outcome!r}"

    def test_async_path(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, ``apublish`` (``adeliver`` / ``adeliver_many``) is broken.

        The async methods must deliver the same bodies as the sync ones, without blocking the
        event loop, and ``aclose()`` must work inside the loop that used the announcer.
        """
        thread = self._thread()

        async def scenario() -> tuple[PublishReport, PublishReport]:
            one = await apublish(sample_questions(1), thread, contract_announcer, strict=True)
            many = await apublish(sample_questions(3), thread, contract_announcer, strict=True)
            await contract_announcer.aclose()
            return one, many

        one, many = asyncio.run(scenario())
        self._assert_all_ok(one, contract_announcer, 1)
        self._assert_all_ok(many, contract_announcer, 3)
        self._assert_bodies(contract_announcer, [*one.envelopes, *many.envelopes])

    def test_republish_same_question(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, publishing a question again errors or corrupts the first copy.

        Hosts republish on every redelivered start message, with a fresh ``event_id`` and the
        same ``question_id``. The transport may absorb the duplicate (dedupe on
        ``type`` + ``question_id``) or deliver it again; both must count as delivered.
        """
        [question] = sample_questions(1)
        thread = self._thread()
        first = publish([question], thread, contract_announcer, strict=True)
        second = publish([question], thread, contract_announcer, strict=True)
        assert first.ok
        assert second.ok
        assert first.envelopes[0].dedupe_key == second.envelopes[0].dedupe_key
        assert first.envelopes[0].event_id != second.envelopes[0].event_id
        bodies = self.received(contract_announcer)
        if bodies is None:
            return
        published = [first.envelopes[0].to_dict(), second.envelopes[0].to_dict()]
        copies = [b for b in bodies if b.get("question_id") == question.question_id]
        assert copies, "the question is not among the bodies the transport received"
        for copy in copies:
            assert copy in published, "a copy of the question differs from every published envelope"

    def test_failing_transport_is_reported(self) -> None:
        """If this fails, a transport failure escapes ``publish`` or is silently dropped.

        ``deliver``/``deliver_many`` must raise (or return the exception as the outcome) when
        the transport fails; ``publish`` then records it in the ``PublishReport``. Never
        swallow a failure inside the announcer.
        """
        failing = self.make_failing_announcer()
        if failing is None:
            pytest.skip("make_failing_announcer() is not implemented")
        try:
            thread = self._thread()
            one = publish(sample_questions(1), thread, failing)
            many = publish(sample_questions(2), thread, failing)
            asynchronous = asyncio.run(apublish(sample_questions(2), thread, failing))
        finally:
            failing.close()
        for report, count in ((one, 1), (many, 2), (asynchronous, 2)):
            assert not report.ok, "a failing transport was reported as delivered"
            assert len(report.failures) == count
            for delivery in report.failures:
                assert delivery.announcer == failing.name
                assert delivery.error, "a failed delivery carries no error text"
                assert delivery.exception is not None

    def test_strict_raises_announce_failed(self) -> None:
        """If this fails, ``publish(..., strict=True)`` does not raise on a transport failure.

        Hosts use strict mode to leave their inbound message unacknowledged; the failure must
        reach ``publish`` as an exception or an outcome, never be swallowed.
        """
        failing = self.make_failing_announcer()
        if failing is None:
            pytest.skip("make_failing_announcer() is not implemented")
        try:
            with pytest.raises(AnnounceFailed) as raised:
                publish(sample_questions(1), self._thread(), failing, strict=True)
        finally:
            failing.close()
        assert raised.value.report.failures

    def test_close_is_idempotent(self, contract_announcer: BaseAnnounce) -> None:
        """If this fails, ``close()``/``aclose()`` cannot be called twice or after use.

        Hosts close announcers on shutdown, sometimes more than once (context managers plus
        explicit calls); closing must be safe in any order.
        """
        publish(sample_questions(1), self._thread(), contract_announcer, strict=True)
        contract_announcer.close()
        contract_announcer.close()
        asyncio.run(contract_announcer.aclose())
        with contract_announcer:
            pass


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
_ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
_NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
_ADAPTER_POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    answer_ttl="PT15M",
    allowed_actions=("approve", "reject", "escalate"),
    tags={"approver_group": "finance", "region": "eu"},
    correlation={"provider": "contract", "id": "re_4471"},
)
_ARGS: dict[str, Any] = {"order_id": "order-4471", "amount": 41000}


def _clock() -> datetime:
    return _NOW


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
        _, question = self._park(self._function(_ADAPTER_POLICY), self._thread())
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
        parked, question = self._park(self._function(_ADAPTER_POLICY), self._thread())
        assert question.policy == _ADAPTER_POLICY, f"policy: {question.policy!r}"
        assert question.source == Source(function="issue_refund"), f"source: {question.source!r}"
        report = self.publish_interrupts(parked, "order-4471", inbox, clock=_clock)
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
        parked, question = self._park(self._function(_ADAPTER_POLICY), thread_id)
        reply_to = {"kind": "queue", "url": "https://example.invalid/answers"}
        report = self.publish_interrupts(parked, thread_id, inbox, reply_to=reply_to, clock=_clock)
        assert isinstance(report, PublishReport), f"returned {type(report).__name__}"
        assert report.ok, f"deliveries failed: {[d.error for d in report.failures]}"
        assert report.question_ids == [question.question_id]
        [envelope] = inbox.envelopes
        data = json.loads(envelope.to_json())
        assert list(data) == _ENVELOPE_FIELDS, f"fields: {list(data)}"
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
        done = self._finish(self._function(_ADAPTER_POLICY), {"action": "approve"})
        assert self.runs == [("order-4471", 41000)], f"runs: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, "refunded 41000 on order-4471"), f"the caller received {seen!r}"

    def test_approve_with_args_runs_the_body_with_the_edited_args(self) -> None:
        """If this fails, ``{"action": "approve", "args": {...}}`` does not edit the call.

        The edited arguments replace the published ones (the others stay) before the body
        runs, once.
        """
        answer = {"action": "approve", "args": {"amount": 500}}
        done = self._finish(self._function(_ADAPTER_POLICY), answer)
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
        done = self._finish(self._function(_ADAPTER_POLICY), answer)
        assert self.runs == [], f"the body ran on {answer!r}: {self.runs}"
        seen = self.returned(done)
        assert _same(seen, answer), f"the caller received {seen!r}, not the answer {answer!r}"

    def test_decision_parameter_receives_the_whole_answer(self) -> None:
        """If this fails, a ``decision`` parameter does not get the whole answer.

        A function with a decision parameter always runs on resume, once, and receives the
        answer verbatim there; the parameter is never published.
        """
        function = self._function(_ADAPTER_POLICY, decision=True)
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

        function = self._function(_ADAPTER_POLICY, when=large)
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
        function = self._function(_ADAPTER_POLICY, mode="async", announce=inbox, clock=_clock)
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
        function = self.define(self.wait(_ADAPTER_POLICY), self._body)
        return self.build(function, [dict(t) for t in _TURNS])

    def _start(self) -> dict[str, Any]:
        return {"thread_id": self.thread_id, "input": self.start_input}

    def _parked(self, app: Any) -> WaitEnvelope:
        started = self.handle(app, self._start(), self.inbox, clock=_clock)
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
        self.handle(app, self._start(), self.inbox, clock=_clock, trust=AnswerTrust([old]))
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
        self.handle(app, self._start(), self.inbox, clock=_clock, trust=refuse)
        reply_with = self.inbox.envelopes[-1].reply_with.model_dump(mode="json")
        assert reply_with.get("expires_at") == "2026-09-14T09:00:00Z", (
            f"reply_with does not carry expires_at: {reply_with}"
        )
        late = _NOW + timedelta(days=4)
        approve = {**reply_with, "answer": {"action": "approve"}}
        expired = self.handle(app, approve, self.inbox, trust=refuse, clock=lambda: late)
        assert expired.outcome is Outcome.EXPIRED, f"{expired.outcome}: {expired.detail}"
        maybe = {**reply_with, "answer": {"action": "maybe"}}
        invalid = self.handle(app, maybe, self.inbox, trust=refuse, clock=_clock)
        assert invalid.outcome is Outcome.INVALID_ANSWER, f"{invalid.outcome}: {invalid.detail}"
        assert self.runs == [], f"a refused answer ran the body: {self.runs}"
        default = AnswerTrust(expired="default")
        handled = self.handle(app, approve, self.inbox, trust=default, clock=lambda: late)
        assert handled.outcome is Outcome.RESUMED, f"{handled.outcome}: {handled.detail}"
        assert self.runs == [], f"the late approval ran instead of the default: {self.runs}"
