"""The answer forms on the answering page are those of real questions (see tests/answer_forms.py)."""

from __future__ import annotations

import inspect

from agent_wait.core import Question, WaitPolicy
from agent_wait.core._policy import UNSTATED
from agent_wait.host._wait import wait_answer_schema
from tests.answer_forms import check_page

CARD = {
    "type": "object",
    "properties": {"choice": {"enum": ["visa", "amex"]}},
    "required": ["choice"],
}


def issue_refund(order_id: str, amount: int) -> None: ...


def test_the_answering_page_shows_the_answer_forms_of_each_kind_of_question() -> None:
    policy = WaitPolicy(allowed_actions=["approve", "reject", "escalate"])
    schema = wait_answer_schema(
        issue_refund, inspect.signature(issue_refund).parameters.values(), policy.allowed_actions
    )
    call = {"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 41000}}
    check_page(
        "answering.md",
        "core",
        [
            (
                "`@wait` call (every framework)",
                Question(question_id="q", question=call, policy=policy, answer_schema=schema),
                [
                    {"action": "approve"},
                    {"action": "approve", "args": {"amount": 40000}},
                    {"action": "escalate", "reason": "over my limit"},
                ],
            ),
            (
                "a question with an `answer_schema` of its own",
                Question(
                    question_id="q", question="Which card?", policy=UNSTATED, answer_schema=CARD
                ),
                [{"choice": "amex"}],
            ),
            (
                "a question that states no shape (no `answer_schema`)",
                Question(question_id="q", question="Transfer 500?", policy=UNSTATED),
                [True, False, "y", {"approved": True}],
            ),
        ],
    )
