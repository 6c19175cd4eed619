"""The answer forms on the Pydantic AI page are those of real questions (see tests/answer_forms.py)."""

from __future__ import annotations

from agent_wait.pydantic_ai import questions_in
from tests.answer_forms import check_page
from tests.pydantic_ai.test_answer_check import Ops


def test_the_pydantic_ai_page_shows_the_answer_forms_of_real_questions() -> None:
    ops = Ops()
    restart, delete, job = questions_in(ops.agent.run_sync("go"))
    check_page(
        "frameworks/pydantic-ai.md",
        "pydantic-ai",
        [
            (
                "`@wait` tool",
                restart,
                [
                    {"action": "approve"},
                    {"action": "approve", "args": {"replicas": 5}},
                    {"action": "reject", "reason": "not now"},
                ],
            ),
            (
                "`requires_approval` tool, `ApprovalRequired`",
                delete,
                [
                    {"action": "approve", "args": {"path": "/tmp/y"}},
                    True,
                    False,
                    "Deleting files is not allowed",
                ],
            ),
            (
                "`CallDeferred` (external) call",
                job,
                [
                    {"rows": 42},
                    "done",
                    {"kind": "model-retry", "message": "try a smaller batch"},
                    {"kind": "tool-failed", "message": "the job crashed"},
                ],
            ),
        ],
    )
