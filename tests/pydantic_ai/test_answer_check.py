"""Pydantic AI deferred calls answered through ``agent-wait answer``: refused before recording.

A real agent on an offline ``FunctionModel`` parks on a ``requires_approval`` tool, a ``@wait``
tool and a ``CallDeferred`` call through the real host into the embedded inbox; each question's
``answer_schema`` says what it takes, ``agent-wait answer`` refuses anything else before it is
recorded, and correct answers then resume the run once.
"""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout
from typing import Any

import pytest
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests, RunContext

from agent_wait.core import Outcome, SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.host import AnswerNotAccepted, answer
from agent_wait.host._cli import main
from agent_wait.pydantic_ai import InMemoryHistory, handle_message, wait
from tests.pydantic_ai.scripted import Script, seen_by_model

THREAD = "ops-1"


def cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def received() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    with SqliteEntry(default_inbox_path()) as entry:
        while batch := entry.receive(10):
            for message in batch:
                messages.append(message.message)
                assert entry.ack(message)
    return messages


def all_open() -> bool:
    with SqliteQuestionStore(default_inbox_path()) as store:
        return all(q.is_open and q.answer is None for q in store.open_questions()) and (
            len(store.open_questions()) == 3
        )


class Ops:
    """A ``@wait`` restart, a ``requires_approval`` delete and a ``CallDeferred`` job."""

    def __init__(self) -> None:
        self.runs: list[str] = []
        self.script = Script(
            ("restart", {"service": "api", "replicas": 3}),
            ("delete_file", {"path": "/tmp/x"}),
            ("run_job", {"job": "nightly"}),
        )
        self.agent = Agent(self.script.model, output_type=[str, DeferredToolRequests])
        self.history = InMemoryHistory()
        runs = self.runs

        @self.agent.tool
        @wait
        def restart(ctx: RunContext[None], service: str, replicas: int) -> str:
            runs.append(f"restart {service} x{replicas}")
            return "restarted"

        @self.agent.tool_plain(requires_approval=True)
        def delete_file(path: str) -> str:
            runs.append(f"delete {path}")
            return "deleted"

        @self.agent.tool_plain
        def run_job(job: str) -> str:
            raise CallDeferred

    def start(self) -> dict[str, str]:
        started = handle_message(
            self.agent,
            {"thread_id": THREAD, "input": "go"},
            SqliteAnnounce(),
            history=self.history,
        )
        assert started.outcome is Outcome.STARTED
        return {e.question["function"]: e.question_id for e in started.report.envelopes}


@pytest.mark.parametrize(
    ("tool", "typed", "refusal"),
    [
        ("restart", '{"action": "approve", "args": {"replicas": "3"}}', "answer.args.replicas"),
        ("restart", '{"action": "approve", "args": {"replicas": 1e400}}', "inf is not a finite"),
        ("restart", '"yes please"', "answer: 'yes please' is not of type 'object'"),
        ("delete_file", '{"action": "approve", "args": {"file": "/y"}}', "answer.args: Additional"),
        ("delete_file", '{"action": "approve", "args": {"path": 7}}', "answer.args.path: 7 is not"),
        ("delete_file", "3", "answer: 3 is not valid under any of the given schemas"),
        ("run_job", "null", "an answer cannot be null"),
        (
            "run_job",
            '{"kind": "model-retry", "message": 5}',
            "answer.message: 5 is not of type 'string'",
        ),
    ],
)
def test_each_deferred_call_refuses_what_it_cannot_take(
    tool: str, typed: str, refusal: str
) -> None:
    ops = Ops()
    ids = ops.start()
    code, out, err = cli("answer", ids[tool], "--json", typed)
    assert (code, out) == (1, "")
    assert refusal in err
    assert received() == []
    assert all_open()


def test_correct_answers_in_every_documented_shape_resume_once() -> None:
    ops = Ops()
    ids = ops.start()
    with pytest.raises(AnswerNotAccepted, match=r"answer.action: 'escalate' is not one of"):
        answer(ids["delete_file"], "escalate")
    assert all_open()
    code, _, err = cli(
        "answer",
        ids["restart"],
        "approve",
        "--answer",
        '{"args": {"replicas": 5}}',
        "--also",
        ids["delete_file"],
        '"not today"',
        "--also",
        ids["run_job"],
        '{"rows": 42}',
    )
    assert (code, err) == (0, "")
    [message] = received()
    resumed = handle_message(ops.agent, message, SqliteAnnounce(), history=ops.history)
    assert resumed.outcome is Outcome.RESUMED
    assert ops.runs == ["restart api x5"]
    assert resumed.result is not None
    seen = seen_by_model(resumed.result.output)
    assert seen[ids["delete_file"]]["content"] == "not today"
    assert seen[ids["run_job"]]["content"] == {"rows": 42}
