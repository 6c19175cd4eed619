"""The answer forms on the Strands page are those of real questions (see tests/answer_forms.py)."""

from __future__ import annotations

from typing import Any

from strands import ToolContext, tool

from agent_wait.strands import questions_in
from tests.answer_forms import check_page
from tests.strands.fake_model import Call, ScriptedModel
from tests.strands.test_wait import REFUND, Factory, refund_tool


def test_the_strands_page_shows_the_answer_forms_of_real_questions(factory: Factory) -> None:
    @tool(context=True)
    def delete_file(path: str, tool_context: ToolContext) -> str:
        """Delete a file (unaware of agent-wait)."""
        return f"deleted {path}: {tool_context.interrupt('approve-delete', reason=path)}"

    [refund] = questions_in(factory(ScriptedModel([REFUND]), [refund_tool([])])("t-1")("go"))
    bare = ScriptedModel([Call("delete_file", {"path": "/tmp/x"})])
    [interrupt] = questions_in(factory(bare, [delete_file])("t-2")("go"))
    answers: list[Any] = [{"action": "approve"}, {"action": "reject", "reason": "duplicate"}]
    check_page(
        "frameworks/strands.md",
        "strands",
        [
            ("`@wait` tool", refund, [*answers, {"action": "approve", "args": {"amount": 40000}}]),
            (
                "`tool_context.interrupt` or a hook interrupt: no shape stated",
                interrupt,
                ["y", True],
            ),
        ],
    )
