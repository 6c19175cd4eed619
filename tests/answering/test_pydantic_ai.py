"""Pydantic AI deferred tools, answered with ``agent-wait answer`` as a person would.

The agent is Pydantic AI's documented approval pattern (``requires_approval=True`` and
``DeferredToolRequests`` as an output type) over a real offline ``FunctionModel``; the worker
is ``agent_wait.pydantic_ai.serve`` on the embedded sqlite entry point.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel

from agent_wait.pydantic_ai import InMemoryHistory, serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import accepted, refused
from tests.pydantic_ai.scripted import Script

Deploy = Callable[..., Deployment]


def files_agent(ran: list[str], *calls: tuple[str, dict[str, Any]]) -> Agent[None, Any]:
    agent = Agent(Script(*calls).model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    return agent


def deployed(deploy: Deploy, ran: list[str], *paths: str) -> Deployment:
    agent = files_agent(ran, *(("delete_file", {"path": path}) for path in paths))
    return deploy(serve, agent, history=InMemoryHistory())


# --- 3. Pydantic AI's own approvals: true approves, false and reject deny --------------------------


def test_json_true_approves_as_pydantic_ai_documents_it(deploy: Deploy) -> None:
    ran: list[str] = []
    host = deployed(deploy, ran, "/tmp/report.csv")
    host.start("files-1", "clean up")
    assert host.handled("files-1") == "started"
    question_id = host.question("files-1").envelope.question_id

    accepted(host.answer(question_id, "--json", "true"), question_id)
    assert host.handled("files-1") == "resumed"
    assert ran == ["/tmp/report.csv"]


def test_false_and_reject_never_delete_and_an_unknown_argument_is_refused(deploy: Deploy) -> None:
    ran: list[str] = []
    host = deployed(deploy, ran, "/tmp/report.csv")
    host.start("files-2", "clean up")
    host.start("files-3", "clean up")
    assert host.handled("files-2") == host.handled("files-3") == "started"
    first = host.question("files-2").envelope.question_id
    second = host.question("files-3").envelope.question_id

    edited = '{"action": "approve", "args": {"file": "/etc/passwd"}}'
    message = refused(host.answer(first, "--json", edited), "answer", "file")
    assert f"send it with: agent-wait answer {first} approve" in message
    assert host.stored(first).is_open

    accepted(host.answer(first, "--json", "false"), first)
    accepted(host.answer(second, "reject", "--answer", '{"reason": "keep it"}'), second)
    assert {host.handled("files-2"), host.handled("files-3")} == {"resumed"}
    assert ran == []


# --- 5. one message answering several calls: every call gets its answer -----------------------------


def test_one_answer_with_also_answers_both_calls_of_a_turn(deploy: Deploy) -> None:
    ran: list[str] = []
    host = deployed(deploy, ran, "/tmp/a.csv", "/tmp/b.csv")
    host.start("files-4", "clean up")
    assert host.handled("files-4") == "started"
    by_path = {q.envelope.question["args"]["path"]: q.envelope for q in host.questions("files-4")}
    first, second = by_path["/tmp/a.csv"].question_id, by_path["/tmp/b.csv"].question_id

    done = host.answer(first, "--json", "true", "--also", second, "false")
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert host.handled("files-4") == "resumed"
    assert ran == ["/tmp/a.csv"]
    assert host.questions("files-4") == []


# --- 7. a streaming host with a new prompt on resume is served, no receive loop of one's own ---------


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    """Call delete_file on the first prompt; then say which prompts came with the results."""
    last = messages[-1]
    assert isinstance(last, ModelRequest)
    prompts = [p.content for p in last.parts if isinstance(p, UserPromptPart)]
    if not any(isinstance(p, ToolReturnPart) for p in last.parts):
        return ModelResponse(parts=[ToolCallPart("delete_file", {"path": "/tmp/x"}, "del-1")])
    return ModelResponse(parts=[TextPart(f"done, then asked: {prompts}")])


async def _stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[Any]:
    for index, part in enumerate(_respond(messages, info).parts):
        if isinstance(part, TextPart):
            yield part.content
        elif isinstance(part, ToolCallPart):
            arguments = part.args_as_json_str()
            yield {index: DeltaToolCall(part.tool_name, arguments, tool_call_id=part.tool_call_id)}


def test_a_streamed_run_resumes_through_serve_with_the_new_prompt(deploy: Deploy) -> None:
    ran: list[str] = []
    agent = Agent(
        FunctionModel(_respond, stream_function=_stream), output_type=[str, DeferredToolRequests]
    )

    @agent.tool_plain(requires_approval=True)
    def delete_file(path: str) -> str:
        ran.append(path)
        return f"deleted {path}"

    events: list[tuple[str, Any]] = []
    host = deploy(
        serve,
        agent,
        history=InMemoryHistory(),
        stream=lambda thread_id, event: events.append((thread_id, event)),
        user_prompt="and wrap up",
    )
    host.start("files-5", "clean up")
    assert host.handled("files-5") == "started"
    question_id = host.question("files-5").envelope.question_id
    accepted(host.answer(question_id, "approve"), question_id)
    assert host.handled("files-5") == "resumed"
    assert ran == ["/tmp/x"]
    streamed = " ".join(str(event) for thread_id, event in events if thread_id == "files-5")
    assert "done, then asked: ['and wrap up']" in streamed
