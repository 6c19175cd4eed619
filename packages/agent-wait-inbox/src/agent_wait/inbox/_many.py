"""Several open questions of one thread answered in one message, so the run resumes once.

Every answer is checked here first (allowed actions, a middleware batch's decisions, edited
arguments, the answer schema) and nothing is recorded or sent unless all of them pass; then
core's ``answer_many`` records every question closed through the store's compare-and-set and
sends one message. If one of them was closed first, it reopens the ones it closed and sends
nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from agent_wait.core import StoredQuestion, example_answer
from agent_wait.core import answer_problem as core_answer_problem
from agent_wait.inbox._batch import (
    batch_actions,
    decisions_from_form,
    decisions_problem,
    edited,
    json_kind,
    mapping,
    summary,
)

WHOLE_KINDS = ("text", "json")
WHOLE = "whole"
DECISIONS = "decisions"
ACTION = "action:"


@dataclass(frozen=True, slots=True)
class Problem:
    """Why one answer was refused: the question and the message naming the field."""

    question_id: str
    error: str


class Refused(Exception):
    """Nothing was recorded or sent.

    Attributes:
        status: 400 (a malformed or refused answer), 404 (no such question in the thread) or
            409 (already closed).
        problems: One per refused answer, in the order given.
        closed: The questions that were already closed (for a 409), as whoever closed them
            left them.
    """

    def __init__(
        self, status: int, problems: list[Problem], closed: Sequence[StoredQuestion] = ()
    ) -> None:
        super().__init__("; ".join(p.error for p in problems))
        self.status = status
        self.problems = problems
        self.closed = list(closed)


def whole_answer(text: str, kind: str) -> Any:
    """The whole answer typed in a question's answer box: the text itself, or the JSON it holds."""
    if kind not in WHOLE_KINDS:
        raise ValueError(f"whole_as: expected text or json, got {kind[:40]!r}")
    if not text.strip():
        raise ValueError("answer: empty; type the answer the question expects")
    if kind == "text":
        return text
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(f"answer: not valid JSON ({error})") from None
    if value is None:
        raise ValueError("answer: null is not an answer")
    return value


def form_answer(question: StoredQuestion, fields: Mapping[str, str], choice: str) -> Any:
    """The whole answer an answer form gives for ``choice``: ``whole``, ``decisions`` or an action.

    ``fields`` are the form's fields for this question: ``whole`` and ``whole_as`` for the
    answer box; ``action.<i>.decision`` (``.arg.<name>``, ``.message``) for a middleware batch;
    ``arg.<name>`` and ``reason`` with an action (changed arguments are sent as ``args``).

    Raises:
        ValueError: The answer box is empty or not JSON, a decision is missing or malformed,
            or an edited argument is (the message names the field).
    """
    if choice == WHOLE:
        return whole_answer(fields.get("whole", ""), fields.get("whole_as", "text"))
    actions = batch_actions(question.envelope.question)
    if choice == DECISIONS:
        if actions is None:
            raise ValueError("decisions: the question is not a batch of actions")
        decisions = decisions_from_form(actions, fields)
        return {"action": summary(decisions), "decisions": decisions}
    if not choice:
        allowed = ", ".join(question.envelope.allowed_actions) or "none"
        raise ValueError(f"action: choose one of the question's allowed_actions ({allowed})")
    payload: dict[str, Any] = {}
    asked = mapping(mapping(question.envelope.question).get("args"))
    args = edited(asked, fields, "arg.", "args")
    if args is not None:
        payload["args"] = args
    reason = fields.get("reason", "").strip()
    if reason:
        payload["reason"] = reason[:2000]
    return {**payload, "action": choice}


def answer_problem(question: StoredQuestion, value: Any) -> str | None:
    """Why ``value`` would not answer ``question``, or None: checked before anything is recorded.

    For a middleware batch, not one valid decision per action; edited ``args`` naming an
    argument the question does not have, or changing an argument's JSON type (each said in the
    form's terms); then core's check of every answer (:func:`agent_wait.core.answer_problem`:
    ``allowed_actions``, ``answer_schema``, JSON every framework keeps, size), followed by a
    valid answer built from the question's ``answer_schema``.

    Raises:
        AgentWaitError: The question's ``answer_schema`` cannot be checked (no ``jsonschema``,
            or not a valid schema).
    """
    envelope = question.envelope
    fields = mapping(value)
    actions = batch_actions(envelope.question)
    if actions is not None:
        problem = decisions_problem(actions, fields.get("decisions"))
        if problem:
            return problem
    asked = mapping(envelope.question).get("args")
    allowed = envelope.allowed_actions
    if allowed and "action" in fields and "args" in fields and isinstance(asked, Mapping):
        problem = args_problem(cast("Mapping[str, Any]", asked), fields["args"])
        if problem:
            return problem
    problem = core_answer_problem(envelope, value)
    if problem is None:
        return None
    example = example_answer(envelope.answer_schema, envelope.allowed_actions)
    example = json.dumps(example, ensure_ascii=False)
    return f"{problem[:300]}; a valid answer: {example[:300]}"


def args_problem(asked: Mapping[str, Any], args: Any) -> str | None:
    """Why ``args`` are not edited arguments of a question that asked with ``asked``, or None.

    The names must be the question's arguments (the host runs the call with them in their
    place) and each value keeps its argument's JSON type, as the edit form requires.
    """
    if not isinstance(args, Mapping):
        return (
            f"answer.args: expected an object of the question's arguments, got a {json_kind(args)}"
        )
    for name, value in cast("Mapping[str, Any]", args).items():
        if name not in asked:
            return f"answer.args.{name[:40]}: the question has no argument named {name[:40]!r}"
        before = asked[name]
        if before is not None and json_kind(value) != json_kind(before):
            return (
                f"answer.args.{name[:40]}: expected a {json_kind(before)} like the original, "
                f"got {json.dumps(value, ensure_ascii=False)[:40]}"
            )
    return None


def answer_of_body(body: Any, where: str = "") -> Any:
    """The whole answer of a JSON API answer body: ``{**answer, "action": action}``, or ``answer``.

    ``{"action": "approve", "answer": {...more fields}}``, or ``{"answer": ...}`` (any JSON but
    null) for a question whose code expects its own shape.

    Raises:
        ValueError: The body is malformed; the message names the field (after ``where``).
    """
    prefix = f"{where}." if where else ""
    shape = '{"action": "...", "answer": {...}}'
    if not isinstance(body, Mapping):
        raise ValueError(f'{where or "body"}: expected {shape} or {{"answer": ...}}')
    fields = cast("Mapping[str, Any]", body)
    if "action" in fields:
        action, extra = fields["action"], fields.get("answer")
        if not isinstance(action, str) or not action:
            raise ValueError(
                f"{prefix}action: expected a string such as 'approve', got {action!r}"[:200]
            )
        if extra is not None and not isinstance(extra, Mapping):
            raise ValueError(
                f"{prefix}answer: with an action, expected a JSON object of more fields"
            )
        return {**cast("Mapping[str, Any]", extra or {}), "action": action}
    if fields.get("answer") is None:
        raise ValueError(
            f'{where or "body"}: expected {shape}, or {{"answer": ...}} (any JSON but null) for '
            "the whole answer"
        )
    return fields["answer"]


def api_answers(body: Any) -> list[tuple[str, Any]]:
    """The JSON API's several answers: ``(question id, whole answer)`` in the order given.

    ``{"answers": [{"question_id": ..., "action": ..., "answer": {...}}, {"question_id": ...,
    "answer": ...}, ...]}``: each item is a single answer's body plus the question's id.

    Raises:
        ValueError: The body is malformed (the message names ``answers[i]`` and the field).
    """
    items = mapping(body).get("answers")
    if not isinstance(items, list) or not items:
        raise ValueError(
            'answers: expected a non-empty list of {"question_id": "...", "action": "...", '
            '"answer": {...}} or {"question_id": "...", "answer": ...}'
        )
    answers: list[tuple[str, Any]] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(cast("list[Any]", items)):
        where = f"answers[{index}]"
        if not isinstance(item, Mapping):
            raise ValueError(f"{where}: expected an object with question_id, got {item!r}"[:200])
        question_id = cast("Mapping[str, Any]", item).get("question_id")
        if not isinstance(question_id, str) or not question_id:
            raise ValueError(
                f"{where}.question_id: expected a question's id, got {question_id!r}"[:200]
            )
        if question_id in seen:
            raise ValueError(
                f"{where}.question_id: {question_id[:40]!r} is already answered by "
                f"answers[{seen[question_id]}]; one answer per question"
            )
        seen[question_id] = index
        answers.append((question_id, answer_of_body(item, where)))
    return answers


def check_all(
    thread_id: str, questions: Sequence[StoredQuestion], answers: Sequence[tuple[str, Any]]
) -> list[tuple[StoredQuestion, Any]]:
    """Each answer paired with its question of the thread, once every one has passed its checks.

    Raises:
        Refused: 404 naming the ids the thread does not have; else 409 naming the questions
            already closed; else 400 with one problem per refused answer.
    """
    by_id = {q.envelope.question_id: q for q in questions}
    missing = [
        Problem(
            question_id,
            f"question {question_id[:80]!r}: no such question in thread {thread_id[:80]!r}",
        )
        for question_id, _ in answers
        if question_id not in by_id
    ]
    if missing:
        raise Refused(404, missing)
    pairs = [(by_id[question_id], value) for question_id, value in answers]
    closed = [q for q, _ in pairs if not q.is_open]
    if closed:
        raise Refused(
            409,
            [
                Problem(q.envelope.question_id, f"{label(q)}: already {q.describe_close()}")
                for q in closed
            ],
            closed,
        )
    problems = [
        Problem(q.envelope.question_id, f"{label(q)}: {problem}")
        for q, value in pairs
        if (problem := answer_problem(q, value))
    ]
    if problems:
        raise Refused(400, problems)
    return pairs


def label(question: StoredQuestion) -> str:
    """``question <id>``, for messages that must say which one."""
    return f"question {question.envelope.question_id[:80]}"
