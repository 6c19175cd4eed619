"""Two threads whose framework hands out the same question id both get their question delivered.

A question id is the framework's own id, unique within its thread only: Pydantic AI's
``TestModel`` and replayed histories repeat tool call ids, Strands derives interrupt ids from
the model's ``toolUseId`` (and hook interrupts from their name alone). The transports that
deduplicate (SQS FIFO within five minutes, JetStream within its duplicate window) would
silently drop the second thread's question if the dedupe key named the question alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, DeferredToolRequests, RunContext
from pydantic_ai.models.test import TestModel
from strands import Agent as StrandsAgent
from strands import ToolContext, tool
from strands.session import FileSessionManager

from agent_wait.core import Announce, Handled, Outcome
from agent_wait.nats import NatsAnnounce
from agent_wait.pydantic_ai import InMemoryHistory
from agent_wait.pydantic_ai import handle_message as pydantic_ai_handle_message
from agent_wait.pydantic_ai import wait as pydantic_ai_wait
from agent_wait.sqs import SqsAnnounce
from agent_wait.strands import handle_message as strands_handle_message
from agent_wait.strands import wait as strands_wait
from tests.aws_moto import Aws, create_queue, drain
from tests.nats.conftest import Stream
from tests.strands.fake_model import Call, ScriptedModel

pytestmark = pytest.mark.integration

THREADS = ("order-1", "order-2")


class _PydanticAi:
    """``TestModel`` calls every tool with the id ``pyd_ai_tool_call_id__<tool>``, in every thread."""

    def __init__(self, runs: list[tuple[str, Any]]) -> None:
        agent = Agent(TestModel(), output_type=[str, DeferredToolRequests], deps_type=str)

        @agent.tool
        @pydantic_ai_wait
        def issue_refund(ctx: RunContext[str], amount: int, decision: Any = None) -> str:
            runs.append((ctx.deps, decision))
            return "refunded"

        self.agent = agent
        self.history = InMemoryHistory()

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        return pydantic_ai_handle_message(
            self.agent,
            message,
            announce,
            history=self.history,
            strict=True,
            deps=message["thread_id"],
        )


class _Strands:
    """A scripted model whose ``toolUseId`` depends on the turn only, as a replayed model's does."""

    def __init__(self, runs: list[tuple[str, Any]], sessions: Path) -> None:
        @tool(context=True)
        @strands_wait
        def issue_refund(amount: int, tool_context: ToolContext, decision: Any = None) -> str:
            """Refund an order."""
            runs.append((tool_context.agent.session_id, decision))
            return "refunded"

        self.tool = issue_refund
        self.sessions = sessions

    def agent(self, thread_id: str) -> StrandsAgent:
        return StrandsAgent(
            model=ScriptedModel([Call("issue_refund", {"amount": 7})], "done"),
            tools=[self.tool],
            session_manager=FileSessionManager(
                session_id=thread_id, storage_dir=str(self.sessions)
            ),
            callback_handler=None,
        )

    def handle(self, message: dict[str, Any], announce: Announce) -> Handled:
        return strands_handle_message(self.agent, message, announce, strict=True)


@pytest.mark.parametrize("framework", ["pydantic_ai", "strands"])
def test_the_same_framework_id_in_two_threads_reaches_sqs_fifo_and_jetstream_twice(
    framework: str,
    aws: Aws,
    nats_url: str,
    stream: Stream,
    tmp_path: Path,
) -> None:
    runs: list[tuple[str, Any]] = []
    host = _PydanticAi(runs) if framework == "pydantic_ai" else _Strands(runs, tmp_path)
    sqs = aws.client("sqs")
    queue_url, _ = create_queue(sqs, "approvals.fifo")
    with (
        SqsAnnounce(queue_url, **aws.options) as fifo,
        NatsAnnounce(nats_url, subject=f"{stream.prefix}.questions", stream=stream.name) as nats,
    ):
        announce = [fifo, nats]
        started = [host.handle({"thread_id": t, "input": "refund 7"}, announce) for t in THREADS]
        [first], [second] = (h.question_ids for h in started)
        assert first == second  # the framework's own id, the same in both threads

        queued = [m["Body"] for m in drain(sqs, queue_url)]
        streamed = stream.messages()
        assert (len(queued), len(streamed)) == (2, 2)
        assert {m.body["thread_id"] for m in streamed} == set(THREADS)
        assert {m.body["question_id"] for m in streamed} == {first}
        assert len({m.headers["Nats-Msg-Id"] for m in streamed}) == 2

        # The question id in each envelope is what that thread's host accepts back.
        for thread_id in THREADS:
            answer = {"action": "approve", "by": thread_id}
            message = {"thread_id": thread_id, "question_id": first, "answer": answer}
            assert host.handle(message, announce).outcome is Outcome.RESUMED
    assert runs == [(t, {"action": "approve", "by": t}) for t in THREADS]
