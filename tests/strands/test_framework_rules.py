"""What Strands itself does with answers: the rules docs/frameworks/strands.md states.

handle_message exists because of these; if one of them fails after a Strands upgrade, the docs
and the host checks in agent_wait.strands._host need another look.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import pytest
from strands import ToolContext, tool

from agent_wait.core import WaitPolicy
from agent_wait.strands import interrupt_responses, questions_in, wait
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel

Factory = Callable[[ScriptedModel, Sequence[Any]], Threads]


def gated(runs: list[str], predicate_calls: list[int] | None = None) -> list[Any]:
    calls = predicate_calls if predicate_calls is not None else []

    def asks(**_: Any) -> bool:
        calls.append(1)
        return True

    @tool(context=True)
    @wait(WaitPolicy(), when=asks)
    def first(tool_context: ToolContext) -> str:
        """First."""
        runs.append("first")
        return "first done"

    @tool(context=True)
    @wait
    def second(tool_context: ToolContext) -> str:
        """Second."""
        runs.append("second")
        return "second done"

    return [first, second]


def respond(question_id: str, answer: Any) -> list[dict[str, Any]]:
    return interrupt_responses({"question_id": question_id, "answer": answer})


def test_a_duplicate_after_the_run_finished_raises_value_error(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first")]), gated(runs))
    [question] = questions_in(threads("t")("go"))
    threads("t")(respond(question.question_id, {"action": "approve"}))
    with pytest.raises(ValueError, match="not in interrupt state"):
        threads("t")(respond(question.question_id, {"action": "approve"}))
    assert runs == ["first"]


def test_an_unknown_id_while_parked_raises_key_error(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first")]), gated(runs))
    threads("t")("go")
    with pytest.raises(KeyError, match="no interrupt found"):
        threads("t")(respond("v1:tool_call:other:x", {"action": "approve"}))
    assert runs == []


def test_an_earlier_cycle_id_while_parked_raises_key_error(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first")], [Call("second")]), gated(runs))
    [first] = questions_in(threads("t")("go"))
    [second] = questions_in(threads("t")(respond(first.question_id, {"action": "approve"})))
    assert second.question_id != first.question_id
    with pytest.raises(KeyError, match="no interrupt found"):
        threads("t")(respond(first.question_id, {"action": "approve"}))
    assert runs == ["first"]


def test_a_plain_prompt_while_parked_raises_type_error(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first")]), gated(runs))
    threads("t")("go")
    with pytest.raises(TypeError, match="interruptResponse"):
        threads("t")("go")
    assert runs == []


def test_a_same_cycle_duplicate_is_silently_accepted(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first"), Call("second")]), gated(runs))
    first, second = questions_in(threads("t")("go"))
    again = threads("t")(respond(first.question_id, {"action": "approve"}))
    assert [q.question_id for q in questions_in(again)] == [second.question_id]

    # No error: Strands runs the agent again and parks on the other question once more.
    duplicate = threads("t")(respond(first.question_id, {"action": "reject"}))
    assert duplicate.stop_reason == "interrupt"
    assert [q.question_id for q in questions_in(duplicate)] == [second.question_id]
    assert runs == ["first"]
    assert len(threads.invocations) == 3


def test_a_null_response_asks_again_under_the_same_id(factory: Factory) -> None:
    runs: list[str] = []
    threads = factory(ScriptedModel([Call("first")]), gated(runs))
    [question] = questions_in(threads("t")("go"))
    again = threads("t")(
        [{"interruptResponse": {"interruptId": question.question_id, "response": None}}]
    )
    assert [q.question_id for q in questions_in(again)] == [question.question_id]
    assert runs == []


def test_the_tool_runs_again_from_the_start_on_resume(factory: Factory) -> None:
    # Code before the park (the when= predicate) runs once per attempt: it must be deterministic.
    runs: list[str] = []
    predicate_calls: list[int] = []
    threads = factory(ScriptedModel([Call("first")]), gated(runs, predicate_calls))
    [question] = questions_in(threads("t")("go"))
    threads("t")(respond(question.question_id, {"action": "approve"}))
    assert len(predicate_calls) == 2
    assert runs == ["first"]
