"""The framework-neutral @wait and publish_interrupts, driven through a fake adapter."""

from __future__ import annotations

import inspect
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_wait.core import (
    ENVELOPE_LIMIT,
    InvalidAnswer,
    MemoryAnnounce,
    Question,
    QuestionNotSendable,
    QuestionTooLarge,
    WaitPolicy,
    derive_question_id,
    publish,
)
from agent_wait.host.adapter import (
    WaitCall,
    make_publish_interrupts,
    make_wait,
    question_from_value,
)


class Parked(Exception):
    def __init__(self, payload: dict[str, Any]) -> None:
        self.payload = payload


class FakeAdapter:
    """Parks by raising; resumes by returning the answer queued for the function."""

    name = "fake"

    def __init__(self) -> None:
        self.answers: dict[str, Any] = {}
        self.thread = "thread-1"

    def park(self, call: WaitCall) -> Any:
        if call.name in self.answers:
            return self.answers.pop(call.name)
        raise Parked(call.payload)

    async def apark(self, call: WaitCall) -> Any:
        return self.park(call)

    def thread_id(self, call: WaitCall) -> str:
        return self.thread

    def hidden_parameters(self, signature: inspect.Signature) -> frozenset[str]:
        return frozenset(name for name in signature.parameters if name == "ctx")

    def questions_in(self, result: Any) -> list[Question]:
        return [question_from_value(qid, value) for qid, value in result]


@pytest.fixture
def adapter() -> FakeAdapter:
    return FakeAdapter()


def test_parks_with_policy_and_source_in_the_payload(adapter: FakeAdapter) -> None:
    wait = make_wait(adapter)
    runs: list[int] = []

    @wait(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def issue_refund(order_id: str, amount: int, ctx: object = None) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    with pytest.raises(Parked) as info:
        issue_refund("order-4471", 41000, ctx=object())
    payload = info.value.payload
    assert payload["question"] == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert payload["agent_wait"]["source"] == {"function": "issue_refund"}
    assert payload["agent_wait"]["policy"]["timeout"] == "P3D"
    assert runs == []

    publish_interrupts, _ = make_publish_interrupts(adapter)
    memory = MemoryAnnounce()
    now = datetime(2026, 9, 11, 9, tzinfo=UTC)
    report = publish_interrupts([("iid-1", payload)], "order-4471", memory, clock=lambda: now)
    envelope = report.envelopes[0]
    assert envelope.question_id == "iid-1"
    assert envelope.question == payload["question"]
    assert envelope.source is not None
    assert envelope.source.function == "issue_refund"
    assert envelope.expires_at == "2026-09-14T09:00:00Z"
    assert envelope.tags == {"approver_group": "finance"}


@pytest.mark.parametrize(
    ("answer", "expected_runs", "expected_result"),
    [
        ({"action": "approve"}, [41000], "refunded 41000"),
        ({"action": "approve", "args": {"amount": 100}}, [100], "refunded 100"),
        (
            {"action": "reject", "reason": "too much"},
            [],
            {"action": "reject", "reason": "too much"},
        ),
        ("no", [], "no"),
        (None, [], None),
    ],
)
def test_answer_rules(
    adapter: FakeAdapter, answer: Any, expected_runs: list[int], expected_result: Any
) -> None:
    wait = make_wait(adapter)
    runs: list[int] = []

    @wait
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return f"refunded {amount}"

    adapter.answers["issue_refund"] = answer
    assert issue_refund("o", 41000) == expected_result
    assert runs == expected_runs


def test_edited_args_must_name_published_arguments(adapter: FakeAdapter) -> None:
    @make_wait(adapter)
    def issue_refund(amount: int) -> int:
        return amount

    adapter.answers["issue_refund"] = {"action": "approve", "args": {"amonut": 1}}
    with pytest.raises(InvalidAnswer, match="amonut"):
        issue_refund(5)
    adapter.answers["issue_refund"] = {"action": "approve", "args": [1]}
    with pytest.raises(InvalidAnswer, match=r"answer\.args"):
        issue_refund(5)


def test_decision_parameter_always_runs_with_the_whole_answer(adapter: FakeAdapter) -> None:
    wait = make_wait(adapter)

    @wait(decision="verdict")
    def deploy(service: str, verdict: Any = None) -> Any:
        return (service, verdict)

    assert "verdict" not in inspect.signature(deploy).parameters
    assert "verdict" not in deploy.__annotations__
    with pytest.raises(Parked) as info:
        deploy("api")
    assert info.value.payload["question"]["args"] == {"service": "api"}
    adapter.answers["deploy"] = {"action": "reject", "why": "freeze"}
    assert deploy("api") == ("api", {"action": "reject", "why": "freeze"})


def test_decision_parameter_without_default(adapter: FakeAdapter) -> None:
    @make_wait(adapter)(when=lambda n, **_: n > 1)
    def step(n: int, decision: Any) -> Any:
        return (n, decision)

    assert step(1) == (1, None)
    adapter.answers["step"] = "yes"
    assert step(5) == (5, "yes")


def test_when_predicate_both_branches_and_a_raising_one(adapter: FakeAdapter) -> None:
    wait = make_wait(adapter)

    @wait(when=lambda amount, **_: amount > 1000)
    def issue_refund(order_id: str, amount: int) -> str:
        return "ran"

    assert issue_refund("o", 10) == "ran"
    with pytest.raises(Parked):
        issue_refund("o", 5000)

    def broken(**_: Any) -> bool:
        raise RuntimeError("predicate bug")

    @wait(when=broken)
    def other(x: int) -> str:
        return "ran"

    with pytest.raises(Parked):
        other(1)


def test_async_mode_publishes_once_and_returns_pending(adapter: FakeAdapter) -> None:
    memory = MemoryAnnounce()
    runs: list[int] = []

    @make_wait(adapter)(mode="async", announce=memory)
    def issue_refund(order_id: str, amount: int) -> str:
        runs.append(amount)
        return "ran"

    result = issue_refund("o", 41000)
    expected_id = derive_question_id("thread-1", "issue_refund", {"order_id": "o", "amount": 41000})
    assert result == {
        "status": "pending_approval",
        "question_id": expected_id,
        "function": "issue_refund",
    }
    assert memory.question_ids == [expected_id]
    assert memory.envelopes[0].source is not None
    assert runs == []
    # A redelivered call republishes the same question id.
    assert issue_refund(amount=41000, order_id="o")["question_id"] == expected_id
    assert memory.question_ids == [expected_id, expected_id]


def test_async_mode_requires_announcers(adapter: FakeAdapter) -> None:
    with pytest.raises(ValueError, match="announce"):

        @make_wait(adapter)(mode="async")
        def f() -> None: ...


def test_bad_options_are_named(adapter: FakeAdapter) -> None:
    wait = make_wait(adapter)
    with pytest.raises(ValueError, match="mode"):

        @wait(mode="later")  # type: ignore[arg-type]
        def f() -> None: ...

    with pytest.raises(TypeError, match="annouce"):
        wait(annouce=[])  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="timeout"):
        wait({"timeout": "P1Y"})


def test_unserialisable_argument_fails_at_ask_time(adapter: FakeAdapter) -> None:
    @make_wait(adapter)
    def f(handle: object) -> None: ...

    with pytest.raises(TypeError, match=r"f\(\)\.handle"):
        f(object())


def test_oversize_question_fails_at_ask_time(adapter: FakeAdapter) -> None:
    @make_wait(adapter)
    def f(blob: str) -> None: ...

    with pytest.raises(QuestionTooLarge, match="reference"):
        f("x" * 300_000)


def test_a_lone_surrogate_in_an_argument_fails_at_ask_time_naming_where(
    adapter: FakeAdapter,
) -> None:
    @make_wait(adapter)
    def f(note: str, lines: list[str]) -> None: ...

    with pytest.raises(QuestionNotSendable) as refused:  # raised before it parks (Parked)
        f("fine", ["whole", "ab\ud800c"])  # half of a UTF-16 pair, e.g. a split emoji
    assert refused.value.field == "question.args.lines[1]"
    message = str(refused.value)
    assert "asked by 'f'" in message
    assert "'\\ud800' at position 2" in message
    message.encode("utf-8")  # the message itself holds no surrogate: it can be logged


def test_a_long_thread_id_counts_at_ask_time(adapter: FakeAdapter) -> None:
    # The envelope carries the thread id twice (thread_id and reply_with): a question that fits
    # beside a short one is undeliverable beside a 1,000-character one, and must be refused
    # before the run parks rather than fail at publish (and again on every redelivery).
    @make_wait(adapter)
    def f(blob: str) -> None: ...

    blob = "x" * (ENVELOPE_LIMIT - 2300)
    with pytest.raises(Parked) as parked:
        f(blob)  # beside "thread-1" it fits
    long_thread = "t" * 1000
    question = Question(question_id="0" * 32, question=parked.value.payload["question"])
    report = publish([question], long_thread, MemoryAnnounce())
    [failure] = report.failures
    assert isinstance(failure.exception, QuestionTooLarge)  # what the run would have met

    adapter.thread = long_thread
    with pytest.raises(QuestionTooLarge) as refused:
        f(blob)
    message = str(refused.value)
    assert f"over the {ENVELOPE_LIMIT}-byte limit of the SNS announcer" in message
    assert "thread id, which the envelope carries twice, is 1000 characters" in message
    assert f"makes an envelope of {refused.value.size} bytes" in message
    assert refused.value.size > ENVELOPE_LIMIT
    assert "asked by 'f'" in message


@pytest.mark.parametrize("thread_length", [1, 36, 1000, 20_000])
def test_what_passes_at_ask_time_is_deliverable(adapter: FakeAdapter, thread_length: int) -> None:
    adapter.thread = "t" * thread_length
    memory = MemoryAnnounce()

    @make_wait(adapter)(WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}))
    def f(blob: str) -> None: ...

    def asks(size: int) -> dict[str, Any] | None:
        try:
            f("x" * size)
        except Parked as parked:
            return parked.payload
        except QuestionTooLarge:
            return None
        raise AssertionError("neither parked nor refused")

    low, high = 0, ENVELOPE_LIMIT  # asks(low) parks, asks(high) is refused
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if asks(middle) is not None else (low, middle)
    payload = asks(low)
    assert payload is not None
    question = question_from_value("0" * 64, payload)
    report = publish([question], adapter.thread, memory, reply_to={"queue": "approvals"})
    assert report.ok, report.failures
    # The room left for what ask time cannot see stays small.
    assert len(memory.envelopes[0].to_json()) > ENVELOPE_LIMIT - 2048


async def test_async_functions(adapter: FakeAdapter) -> None:
    memory = MemoryAnnounce()
    wait = make_wait(adapter)

    @wait
    async def approve_me(x: int) -> int:
        return x * 2

    with pytest.raises(Parked):
        await approve_me(2)
    adapter.answers["approve_me"] = {"action": "approve"}
    assert await approve_me(2) == 4

    @wait(mode="async", announce=memory)
    async def later(x: int) -> int:
        return x

    pending = await later(3)
    assert pending["status"] == "pending_approval"
    assert memory.question_ids == [pending["question_id"]]


def test_bare_interrupt_value_states_no_allowed_actions() -> None:
    question = question_from_value("iid", {"please": "confirm"})
    assert question.question == {"please": "confirm"}
    assert question.source is None
    # The code that asked never said which answers it takes: nothing is invented.
    assert question.policy.allowed_actions == ()
    assert question.policy.timeout is None
    assert question.policy.default is None
    assert question.answer_schema is None


def test_payload_with_a_broken_policy_is_still_published() -> None:
    question = question_from_value(
        "iid", {"question": 1, "agent_wait": {"policy": {"timeout": "P1Y"}}}
    )
    assert question.policy.allowed_actions == ()
    assert question.policy.timeout is None


def test_wait_call_names_the_decision_parameter(adapter: FakeAdapter) -> None:
    # Adapters whose framework saves an answer before the body runs validate it with
    # apply_answer(call, answer, call.decision) first; they need the parameter's name.
    wait = make_wait(adapter)
    seen: list[WaitCall] = []

    def park(call: WaitCall) -> Any:
        seen.append(call)
        raise Parked(call.payload)

    adapter.park = park  # type: ignore[method-assign]

    @wait(decision="verdict")
    def with_decision(amount: int, verdict: Any = None) -> Any:
        return verdict

    @wait
    def without_decision(amount: int) -> int:
        return amount

    for function in (with_decision, without_decision):
        with pytest.raises(Parked):
            function(5)
    assert [call.decision for call in seen] == ["verdict", None]


def test_check_hook_sees_every_target_and_doc_is_kept(adapter: FakeAdapter) -> None:
    seen: list[tuple[object, str]] = []

    def check(target: object, decision: str) -> None:
        seen.append((target, decision))
        if target == "not a function":
            raise TypeError("refused by the framework")

    wait = make_wait(adapter, check=check, doc="Framework docs.")
    assert wait.__doc__ == "Framework docs."

    def bare() -> None: ...

    def called(verdict: Any = None) -> None: ...

    wait(bare)
    wait(decision="verdict")(called)
    assert seen == [(bare, "decision"), (called, "verdict")]
    with pytest.raises(TypeError, match="refused by the framework"):
        wait("not a function")  # type: ignore[call-overload]
