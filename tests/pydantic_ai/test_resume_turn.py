"""What the model reads on a resume: a new user prompt, a plain-text denial, a retry or failure."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic_ai import Agent, CallDeferred, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.pydantic_ai import InMemoryHistory, handle_message


class Recorder:
    """A real ``FunctionModel``: calls the scripted tools on the first prompt, then records.

    Every later request is kept in ``requests`` (what the model was sent on that turn), and the
    model answers with plain text, ending the run.
    """

    def __init__(self, *calls: tuple[str, dict[str, Any]]) -> None:
        self.calls = calls
        self.requests: list[ModelRequest] = []
        self.model = FunctionModel(self._respond)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart(name, args, tool_call_id=f"{name}-{index}")
                    for index, (name, args) in enumerate(self.calls)
                ]
            )
        self.requests.append(last)
        return ModelResponse(parts=[TextPart("ok")])

    def parts(self, kind: type[Any]) -> list[Any]:
        """The parts of one kind the model was sent after the first turn, in order."""
        return [p for request in self.requests for p in request.parts if isinstance(p, kind)]


def files_agent(recorder: Recorder, runs: list[str]) -> Agent[None, Any]:
    agent = Agent(recorder.model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        runs.append(f"delete {path}")
        return f"deleted {path}"

    @agent.tool_plain(requires_approval=True)
    def update_file(path: str, content: str) -> str:
        runs.append(f"update {path}")
        return f"updated {path}"

    @agent.tool_plain
    def run_job(job: str) -> str:
        raise CallDeferred(metadata={"queue": "batch"})

    return agent


def start(thread_id: str) -> dict[str, Any]:
    return {"thread_id": thread_id, "input": "Clean up the repo"}


def reply(thread_id: str, question_id: str, value: Any) -> dict[str, Any]:
    return {"thread_id": thread_id, "question_id": question_id, "answer": value}


def test_a_new_user_prompt_goes_with_the_deferred_results(inbox: MemoryAnnounce) -> None:
    # Pydantic AI's headline example: approve, deny, and ask for more, in one turn.
    recorder, runs = Recorder(("delete_file", {"path": "__init__.py"})), []
    agent, history = files_agent(recorder, runs), InMemoryHistory()
    started = handle_message(agent, start("p-1"), inbox, history=history)
    assert started.question_ids == ["delete_file-0"]
    done = handle_message(
        agent,
        reply("p-1", "delete_file-0", {"action": "approve"}),
        inbox,
        history=history,
        user_prompt="Now create a backup of README.md",
    )
    assert done.outcome is Outcome.RESUMED
    assert runs == ["delete __init__.py"]
    [request] = recorder.requests
    kinds = [type(p) for p in request.parts]
    assert kinds == [ToolReturnPart, UserPromptPart]
    assert request.parts[1].content == "Now create a backup of README.md"


def test_prompts_sent_with_held_answers_all_reach_the_resume(inbox: MemoryAnnounce) -> None:
    recorder, runs = (
        Recorder(
            ("delete_file", {"path": "a.py"}), ("update_file", {"path": "b.py", "content": "x"})
        ),
        [],
    )
    agent, history = files_agent(recorder, runs), InMemoryHistory()
    handle_message(agent, start("p-2"), inbox, history=history)
    held = handle_message(
        agent,
        reply("p-2", "delete_file-0", {"action": "approve"}),
        inbox,
        history=history,
        user_prompt="Then list the files.",
    )
    assert held.outcome is Outcome.HELD
    assert recorder.requests == []
    assert runs == []
    done = handle_message(
        agent,
        reply("p-2", "update_file-1", {"action": "approve"}),
        inbox,
        history=history,
        user_prompt="And commit.",
    )
    assert done.outcome is Outcome.RESUMED
    [prompt] = recorder.parts(UserPromptPart)
    assert list(prompt.content) == ["Then list the files.", "And commit."]


def test_a_user_prompt_with_a_start_message_is_refused(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("delete_file", {"path": "a.py"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    with pytest.raises(ValueError, match=r"user_prompt: 'more' goes with an answer.*thread 'p-3'"):
        handle_message(agent, start("p-3"), inbox, history=history, user_prompt="more")
    assert history.load("p-3") == []
    with pytest.raises(TypeError, match=r"user_prompt: expected text, got list"):
        handle_message(agent, start("p-3"), inbox, history=history, user_prompt=["x"])  # type: ignore[arg-type]


def test_a_text_denial_reaches_the_model_as_plain_text(inbox: MemoryAnnounce) -> None:
    recorder, runs = Recorder(("delete_file", {"path": "__init__.py"})), []
    agent, history = files_agent(recorder, runs), InMemoryHistory()
    handle_message(agent, start("d-1"), inbox, history=history)
    denial = "Deleting files is not allowed"
    done = handle_message(agent, reply("d-1", "delete_file-0", denial), inbox, history=history)
    assert done.outcome is Outcome.RESUMED
    assert runs == []
    [denied] = recorder.parts(ToolReturnPart)
    assert denied.content == denial  # not '"Deleting files is not allowed"'
    assert denied.outcome == "denied"


def test_an_object_denial_still_reaches_the_model_as_json(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("delete_file", {"path": "x"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    handle_message(agent, start("d-2"), inbox, history=history)
    verdict = {"action": "reject", "reason": "frozen"}
    handle_message(agent, reply("d-2", "delete_file-0", verdict), inbox, history=history)
    [denied] = recorder.parts(ToolReturnPart)
    assert denied.content == '{"action":"reject","reason":"frozen"}'


def test_an_external_call_can_ask_the_model_to_retry(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("run_job", {"job": "nightly"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    [envelope] = handle_message(agent, start("c-1"), inbox, history=history).report.envelopes
    assert envelope.allowed_actions == []  # answered with a result, not an action
    retry = {"kind": "model-retry", "message": "the queue is full, pick another job"}
    done = handle_message(agent, reply("c-1", "run_job-0", retry), inbox, history=history)
    assert done.outcome is Outcome.RESUMED
    # Pydantic AI sends a deferred call's retry as the call's return, marked retried.
    [part] = recorder.parts(ToolReturnPart)
    assert part.content == "the queue is full, pick another job"
    assert part.tool_call_id == "run_job-0"
    assert part.outcome == "retried"
    assert part.retry is not None
    assert part.retry.cause == "model_retry"


def test_an_external_call_can_report_a_failure(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("run_job", {"job": "nightly"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    handle_message(agent, start("c-2"), inbox, history=history)
    failed = {"kind": "tool-failed", "message": "the job crashed"}
    done = handle_message(agent, reply("c-2", "run_job-0", failed), inbox, history=history)
    assert done.outcome is Outcome.RESUMED
    [part] = recorder.parts(ToolReturnPart)
    assert part.outcome == "failed"
    assert part.content == "the job crashed"
    assert part.retry is None


def test_an_external_result_shaped_otherwise_is_the_result(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("run_job", {"job": "nightly"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    handle_message(agent, start("c-3"), inbox, history=history)
    result = {"kind": "tool-failed", "message": "x", "rows": 3}  # a third key: a plain result
    handle_message(agent, reply("c-3", "run_job-0", result), inbox, history=history)
    [part] = recorder.parts(ToolReturnPart)
    assert part.content == result
    assert part.outcome == "success"


def test_a_retry_without_text_is_refused_before_anything_runs(inbox: MemoryAnnounce) -> None:
    recorder = Recorder(("run_job", {"job": "nightly"}))
    agent, history = files_agent(recorder, []), InMemoryHistory()
    handle_message(agent, start("c-4"), inbox, history=history)
    bad = {"kind": "model-retry", "message": 7}
    refused = handle_message(agent, reply("c-4", "run_job-0", bad), inbox, history=history)
    assert refused.outcome is Outcome.INVALID_ANSWER
    assert refused.detail is not None
    assert "answer.message" in refused.detail
    assert recorder.requests == []


def test_one_message_answers_every_pending_call_and_resumes_once(inbox: MemoryAnnounce) -> None:
    recorder, runs = (
        Recorder(
            ("delete_file", {"path": "a.py"}), ("update_file", {"path": "b.py", "content": "x"})
        ),
        [],
    )
    agent, history = files_agent(recorder, runs), InMemoryHistory()
    handle_message(agent, start("b-1"), inbox, history=history)
    message = {
        **reply("b-1", "delete_file-0", {"action": "approve"}),
        "more_answers": [{"question_id": "update_file-1", "answer": "Not that file"}],
    }
    done = handle_message(agent, message, inbox, history=history)
    assert done.outcome is Outcome.RESUMED  # not held: every pending call is answered
    assert runs == ["delete a.py"]
    returns = {p.tool_call_id: p.content for p in recorder.parts(ToolReturnPart)}
    assert returns == {"delete_file-0": "deleted a.py", "update_file-1": "Not that file"}
    assert len(recorder.requests) == 1
