"""The answer forms on the LangGraph page are those of real questions (see tests/answer_forms.py)."""

from __future__ import annotations

from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import START, StateGraph
from langgraph.types import interrupt

from agent_wait.core import Question
from agent_wait.langgraph import questions_in
from agent_wait.langgraph._breakpoints import Breakpoint
from agent_wait.langgraph._breakpoints import question_of as breakpoint_question
from tests.answer_forms import Kind, check_page
from tests.langgraph.test_answer_check import Office, State, refund_graph, transfer_graph

CARD = {
    "type": "object",
    "properties": {"choice": {"enum": ["visa", "amex"]}},
    "required": ["choice"],
}
INBOX_REQUEST = {
    "action_request": {"action": "send_email", "args": {"to": "cfo@example.com"}},
    "config": {
        "allow_accept": True,
        "allow_edit": True,
        "allow_respond": True,
        "allow_ignore": False,
    },
    "description": "Send it?",
}


def asked(app: Any, value: Any = None) -> list[Question]:
    config = {"configurable": {"thread_id": "docs"}}
    return questions_in(app.invoke(value or {"done": ""}, config))


def one_node(body: Any) -> Any:
    builder = StateGraph(State)
    builder.add_node("ask", body)
    builder.add_edge(START, "ask")
    return builder.compile(checkpointer=InMemorySaver())


def kinds() -> list[Kind]:
    [refund] = asked(refund_graph([]))
    [yes_no] = asked(transfer_graph([]))
    [card] = asked(one_node(lambda state: {"done": interrupt("Which card?", response_schema=CARD)}))
    [inbox] = asked(one_node(lambda state: {"done": str(interrupt([INBOX_REQUEST]))}))
    tidy = {"messages": [("user", "tidy up")]}
    [batch] = asked(Office().agent(), tidy)
    email, delete = asked(Office().agent("per_call"), tidy)
    return [
        (
            "`@wait` call",
            refund,
            [
                {"action": "approve"},
                {"action": "approve", "args": {"amount": 40000}},
                {"action": "reject", "reason": "duplicate"},
            ],
        ),
        ("bare `interrupt(value)`: no shape stated", yes_no, [True, False, "y"]),
        ("`interrupt(value, response_schema=...)`", card, [{"choice": "amex"}]),
        (
            "Agent Inbox request",
            inbox,
            [
                [{"type": "accept", "args": None}],
                [{"type": "response", "args": "not now"}],
                [
                    {
                        "type": "edit",
                        "args": {"action": "send_email", "args": {"to": "ceo@example.com"}},
                    }
                ],
            ],
        ),
        (
            "`HumanInTheLoopMiddleware` batch",
            batch,
            [
                {"decisions": [{"type": "approve"}, {"type": "approve"}]},
                {
                    "decisions": [
                        {
                            "type": "edit",
                            "edited_action": {
                                "name": "send_email",
                                "args": {"to": "ceo@example.com"},
                            },
                        },
                        {"type": "reject", "message": "keep the spreadsheet"},
                    ]
                },
                {"decisions": [{"type": "respond", "message": "ask first"}, {"type": "approve"}]},
            ],
        ),
        (
            "`HumanInTheLoopMiddleware` per call",
            email,
            [{"type": "approve"}, {"type": "reject", "message": "not to the CFO"}],
        ),
        ("`HumanInTheLoopMiddleware` per call, approve or reject", delete, [{"type": "reject"}]),
        (
            "static breakpoint (`interrupt_before` / `interrupt_after`)",
            breakpoint_question(Breakpoint("q", "before", "pay", ("pay",)), {"amount": 500}),
            [{"action": "approve"}, {"action": "reject", "reason": "wrong account"}],
        ),
    ]


def test_the_langgraph_page_shows_the_answer_forms_of_real_questions() -> None:
    check_page("frameworks/langgraph.md", "langgraph", kinds())
