"""Pydantic AI's own approval forms (bare booleans, ``ToolApproved`` / ``ToolDenied``) and answers
to several calls in one message, through the real host and ``deferred_results``."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, RunContext, ToolApproved, ToolDenied
from pydantic_ai.messages import ModelResponse, TextPart

from agent_wait.core import (
    InvalidAnswer,
    MemoryAnnounce,
    Outcome,
    SqliteAnnounce,
    SqliteEntry,
    SqliteQuestionStore,
)
from agent_wait.host import answer_many
from agent_wait.pydantic_ai import (
    InMemoryHistory,
    SqliteHistory,
    deferred_results,
    handle_message,
    serve,
    wait,
)
from tests.pydantic_ai.scripted import Script, seen_by_model
from tests.serving import serving, until


def files_agent(script: Script, runs: list[str], verdicts: list[Any]) -> Agent[None, Any]:
    agent = Agent(script.model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        runs.append(f"delete {path}")
        return f"deleted {path}"

    @agent.tool
    @wait
    def restart(ctx: RunContext[None], service: str) -> str:
        runs.append(f"restart {service}")
        return f"restarted {service}"

    @agent.tool
    @wait(decision="verdict")
    def deploy(ctx: RunContext[None], release: str, verdict: Any) -> str:
        verdicts.append(verdict)
        return f"deploy {release}: {verdict}"

    return agent


def run_until_parked(
    script: Callable[..., Script], *calls: tuple[str, dict[str, Any]]
) -> tuple[Script, Agent[None, Any], InMemoryHistory, list[str], list[Any]]:
    scripted = script(*calls)
    runs: list[str] = []
    verdicts: list[Any] = []
    agent, history = files_agent(scripted, runs, verdicts), InMemoryHistory()
    started = handle_message(
        agent, {"thread_id": "t", "input": "go"}, MemoryAnnounce(), history=history
    )
    assert started.outcome is Outcome.STARTED
    return scripted, agent, history, runs, verdicts


def answer(agent: Agent[None, Any], history: InMemoryHistory, value: Any, **more: Any) -> Any:
    message = {"thread_id": "t", "question_id": "delete_file-1-0", "answer": value, **more}
    return handle_message(agent, message, MemoryAnnounce(), history=history)


DELETE = ("delete_file", {"path": "/tmp/x"})


def test_true_approves_as_approvals_id_true_does(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(script, DELETE)
    done = answer(agent, history, True)
    assert done.outcome is Outcome.RESUMED
    assert runs == ["delete /tmp/x"]
    assert seen_by_model(done.result.output)["delete_file-1-0"]["outcome"] == "success"


def test_false_denies_with_pydantic_ais_own_denial_text(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(script, DELETE)
    done = answer(agent, history, False)
    assert runs == []
    assert seen_by_model(done.result.output)["delete_file-1-0"] == {
        "content": ToolDenied().message,
        "outcome": "denied",
    }


def test_tool_denied_form_gives_the_model_its_message(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(script, DELETE)
    done = answer(agent, history, {"kind": "tool-denied", "message": "not on Fridays"})
    assert runs == []
    assert seen_by_model(done.result.output)["delete_file-1-0"] == {
        "content": "not on Fridays",
        "outcome": "denied",
    }


def test_tool_approved_form_runs_with_its_override_args(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(script, DELETE)
    done = answer(agent, history, {"kind": "tool-approved", "override_args": {"path": "/tmp/y"}})
    assert done.outcome is Outcome.RESUMED
    assert runs == ["delete /tmp/y"]


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (
            {"kind": "tool-approved", "override_args": {"nope": 1}},
            r"answer\.override_args: \['nope'\]",
        ),
        (
            {"kind": "tool-approved", "override_args": "all"},
            r"answer\.override_args: expected an object",
        ),
        ({"kind": "tool-denied", "message": 7}, r"answer\.message: expected the text"),
        ({"kind": "tool-denied", "why": "x"}, r"answer: \['why'\] are not fields of 'tool-denied'"),
    ],
)
def test_a_malformed_pydantic_ai_form_is_refused_before_anything_runs(
    script: Callable[..., Script], value: Any, problem: str
) -> None:
    _, agent, history, runs, _ = run_until_parked(script, DELETE)
    refused = answer(agent, history, value)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert re.search(problem, refused.detail)
    assert runs == []
    assert answer(agent, history, True).outcome is Outcome.RESUMED  # still pending


def test_a_wait_tool_answered_true_runs_its_body(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(script, ("restart", {"service": "api"}))
    message = {"thread_id": "t", "question_id": "restart-1-0", "answer": True}
    done = handle_message(agent, message, MemoryAnnounce(), history=history)
    assert done.outcome is Outcome.RESUMED
    assert runs == ["restart api"]


@pytest.mark.parametrize(
    ("value", "verdict"),
    [
        (True, {"action": "approve"}),
        (False, {"action": "reject"}),
        ({"kind": "tool-denied", "message": "frozen"}, {"action": "reject", "reason": "frozen"}),
        (
            {"kind": "tool-approved", "override_args": {"release": "v2"}},
            {"action": "approve", "args": {"release": "v2"}},
        ),
    ],
)
def test_a_decision_parameter_reads_a_pydantic_ai_form_as_its_action(
    script: Callable[..., Script], value: Any, verdict: dict[str, Any]
) -> None:
    _, agent, history, _, verdicts = run_until_parked(script, ("deploy", {"release": "v1"}))
    message = {"thread_id": "t", "question_id": "deploy-1-0", "answer": value}
    assert (
        handle_message(agent, message, MemoryAnnounce(), history=history).outcome is Outcome.RESUMED
    )
    assert verdicts == [verdict]


def test_more_answers_resume_every_call_in_one_host_step(script: Callable[..., Script]) -> None:
    _, agent, history, runs, _ = run_until_parked(
        script, DELETE, ("delete_file", {"path": "/tmp/z"})
    )
    done = answer(
        agent,
        history,
        True,
        more_answers=[{"question_id": "delete_file-1-1", "answer": False}],
    )
    assert done.outcome is Outcome.RESUMED
    assert runs == ["delete /tmp/x"]
    assert seen_by_model(done.result.output)["delete_file-1-1"]["outcome"] == "denied"


def test_deferred_results_reads_more_answers(script: Callable[..., Script]) -> None:
    runs: list[str] = []
    agent = files_agent(script(DELETE, ("delete_file", {"path": "/tmp/z"})), runs, [])
    parked = agent.run_sync("go")
    message = {
        "thread_id": "t",
        "question_id": "delete_file-1-0",
        "answer": True,
        "more_answers": [
            {"question_id": "delete_file-1-1", "answer": {"kind": "tool-denied", "message": "no"}}
        ],
    }
    results = deferred_results(parked, message)
    assert results.approvals == {
        "delete_file-1-0": ToolApproved(),
        "delete_file-1-1": ToolDenied("no"),
    }
    done = agent.run_sync(message_history=parked.all_messages(), deferred_tool_results=results)
    assert runs == ["delete /tmp/x"]
    assert seen_by_model(done.output)["delete_file-1-1"] == {"content": "no", "outcome": "denied"}


def test_deferred_results_names_the_more_answer_at_fault(script: Callable[..., Script]) -> None:
    agent = files_agent(script(DELETE), [], [])
    parked = agent.run_sync("go")
    first = {"thread_id": "t", "question_id": "delete_file-1-0", "answer": True}
    stray = {**first, "more_answers": [{"question_id": "nope", "answer": True}]}
    with pytest.raises(ValueError, match=r"answers\[0\]\.more_answers\[0\]\.question_id: 'nope'"):
        deferred_results(parked, stray)
    again = {"thread_id": "t", "question_id": "other", "answer": 1, "more_answers": [first]}
    with pytest.raises(ValueError, match=r"answers\[0\]\.question_id: 'other' is not pending"):
        deferred_results(parked, again)
    bad = {"kind": "tool-approved", "override_args": {"x": 1}}
    with pytest.raises(InvalidAnswer, match=r"answer\.override_args: \['x'\]"):
        deferred_results(parked, {**first, "answer": bad})


def test_answers_given_as_people_give_them_reach_the_run_through_serve(tmp_path: Path) -> None:
    # `agent-wait answer ID --json true` and one message answering both calls (more_answers).
    runs: list[str] = []
    agent = files_agent(Script(DELETE, ("delete_file", {"path": "/tmp/z"})), runs, [])
    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send({"thread_id": "s", "input": "go"})
    history = SqliteHistory(tmp_path / "history.sqlite3")
    with (
        serving(
            lambda stop: serve(
                agent, entry, SqliteAnnounce(path), history=history, wait=0.05, stop=stop
            )
        ) as reports,
        SqliteQuestionStore(path) as store,
    ):
        until(lambda: len(store.open_questions()) == 2, "both calls asked")
        answer_many(
            {"delete_file-1-0": True, "delete_file-1-1": False},
            thread_id="s",
            by="alice",
            store=store,
            entry=entry,
        )
        until(lambda: final_text(history), "the run finished")
    [report] = reports
    assert (report.acknowledged, report.retried, report.dead_lettered) == (2, 0, 0)
    assert runs == ["delete /tmp/x"]
    seen = seen_by_model(final_text(history))
    assert seen["delete_file-1-1"] == {"content": ToolDenied().message, "outcome": "denied"}


def final_text(history: SqliteHistory) -> str:
    """The text the model ended thread ``s`` with; empty while it has not."""
    messages = history.load("s")
    last = messages[-1] if messages else None
    if isinstance(last, ModelResponse) and isinstance(last.parts[0], TextPart):
        return last.parts[0].content
    return ""
