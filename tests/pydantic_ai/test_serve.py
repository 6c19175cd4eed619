"""serve(): a Pydantic AI worker over the embedded entry point, answered with answer()."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import DeferredToolRequests
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    PartStartEvent,
    TextPart,
    ToolCallPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, FunctionModel
from pydantic_ai.run import AgentRunResultEvent

from agent_wait.core import SqliteAnnounce, SqliteEntry, SqliteQuestionStore
from agent_wait.host import AnswerTrust, ServeReport, answer
from agent_wait.pydantic_ai import SqliteHistory, aserve, serve
from tests.pydantic_ai.scripted import Script
from tests.pydantic_ai.test_host import REFUND, Refunds
from tests.serving import check_serve_parks_and_resumes, health_endpoints, probe, until
from tests.trust_serving import check_serve_runs_only_signed_replies


def test_serve_parks_and_resumes_threads(tmp_path: Path) -> None:
    refunds = Refunds(Script(REFUND))
    history = SqliteHistory(tmp_path / "history.sqlite3")
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds.agent, entry, announce, history=history, concurrency=1, wait=0.05, stop=stop
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": f"order-{n}", "input": "refund order-4471"} for n in range(3)],
        lambda: len(refunds.runs),
    )
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}] * 3


def test_readyz_reads_the_history_store_and_names_it_while_it_cannot_be_opened(
    tmp_path: Path,
) -> None:
    refunds = Refunds(Script(REFUND))
    directory = tmp_path / "histories"
    history = SqliteHistory(directory / "history.sqlite3")
    entry = SqliteEntry(tmp_path / "inbox.sqlite3", poll_interval=0.02)
    with health_endpoints(
        lambda stop: serve(
            refunds.agent, entry, history=history, wait=0.05, stop=stop, health="127.0.0.1:0"
        )
    ) as address:
        until(lambda: probe(address, "/readyz")[0] == 200, "ready")
        # The store's directory turns into a file: the store cannot open its database.
        history.close()
        (directory / "history.sqlite3").unlink()
        directory.rmdir()
        directory.write_text("not a directory")
        code, body = probe(address, "/readyz")
        assert (code, body["status"], body["down"]) == (
            503,
            "unavailable",
            {"history": "FileExistsError"},
        )
        directory.unlink()
        until(lambda: probe(address, "/readyz")[0] == 200, "ready again")
    history.close()


def test_serve_with_answer_secrets_runs_only_the_replies_it_signed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    # secrets_env names the variable; during a rotation it lists the new secret first.
    monkeypatch.setenv("REFUND_ANSWER_SECRETS", f"{'n' * 40},{'o' * 40}")
    trust = AnswerTrust(secrets_env="REFUND_ANSWER_SECRETS")
    refunds = Refunds(Script(REFUND))
    history = SqliteHistory(tmp_path / "history.sqlite3")
    check_serve_runs_only_signed_replies(
        lambda entry, announce, stop: serve(
            refunds.agent,
            entry,
            announce,
            history=history,
            trust=trust,
            concurrency=1,
            wait=0.05,
            stop=stop,
        ),
        tmp_path / "inbox.sqlite3",
        {"thread_id": "order-4471", "input": "refund order-4471"},
        lambda: len(refunds.runs),
        caplog,
    )
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]


class Refunder:
    """A real ``FunctionModel`` that streams: calls the refund tool on the first prompt, then
    answers with text naming the user prompts the resume brought."""

    def __init__(self) -> None:
        self.model = FunctionModel(self._respond, stream_function=self._stream)

    def _respond(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(parts=[ToolCallPart(*REFUND, tool_call_id="refund-1")])
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        prompts = [p.content for p in last.parts if isinstance(p, UserPromptPart)]
        return ModelResponse(parts=[TextPart(f"done; asked: {prompts}")])

    async def _stream(
        self, messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | dict[int, DeltaToolCall]]:
        for part in self._respond(messages, info).parts:
            if isinstance(part, TextPart):
                yield part.content
            elif isinstance(part, ToolCallPart):
                yield {
                    0: DeltaToolCall(
                        part.tool_name, part.args_as_json_str(), tool_call_id=part.tool_call_id
                    )
                }


def outputs(events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    return [(t, e.result.output) for t, e in events if isinstance(e, AgentRunResultEvent)]


def test_serve_streams_every_run_and_sends_a_prompt_with_each_answer(tmp_path: Path) -> None:
    refunds = Refunds(Refunder().model)
    history = SqliteHistory(tmp_path / "history.sqlite3")
    events: list[tuple[str, Any]] = []
    check_serve_parks_and_resumes(
        lambda entry, announce, stop: serve(
            refunds.agent,
            entry,
            announce,
            history=history,
            concurrency=1,
            wait=0.05,
            stop=stop,
            stream=lambda thread_id, event: events.append((thread_id, event)),
            user_prompt=lambda message: f"now report on {message['thread_id']}",
        ),
        tmp_path / "inbox.sqlite3",
        [{"thread_id": "order-1", "input": "refund order-4471"}],
        lambda: len(refunds.runs),
    )
    assert refunds.runs == [{"order_id": "order-4471", "amount": 41000}]
    # Both runs streamed, the start's parked on the call, the resume's with the prompt.
    [(_, parked), finished] = outputs(events)
    assert isinstance(parked, DeferredToolRequests)
    assert finished == ("order-1", "done; asked: ['now report on order-1']")
    assert any(isinstance(e, PartStartEvent) for _, e in events)


async def eventually(condition: Callable[[], Any], what: str) -> None:
    """Poll ``condition`` while the worker task runs; fail after a minute."""
    for _ in range(1200):
        if condition():
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


async def aserve_one_answer(
    refunds: Refunds, history: SqliteHistory, tmp_path: Path, thread_id: str, **options: Any
) -> ServeReport:
    """``aserve`` a start message on ``thread_id``, approve what it parks on, stop once resumed."""
    path = tmp_path / "inbox.sqlite3"
    entry = SqliteEntry(path, poll_interval=0.02)
    entry.send({"thread_id": thread_id, "input": "refund order-4471"})
    stop = asyncio.Event()
    worker = asyncio.create_task(
        aserve(
            refunds.agent,
            entry,
            SqliteAnnounce(path),
            history=history,
            wait=0.05,
            stop=stop,
            **options,
        )
    )
    with SqliteQuestionStore(path) as store:
        await eventually(store.open_questions, "the thread parked")
        [question] = store.open_questions()
        answer(
            question.envelope.question_id, "approve", thread_id=thread_id, store=store, entry=entry
        )
        await eventually(lambda: len(refunds.runs) == 1, "the resume ran")
    stop.set()
    # The worker finishes the message in hand before it returns: the resume has ended.
    return await worker


async def test_aserve_streams_to_a_coroutine_and_sends_a_fixed_prompt(tmp_path: Path) -> None:
    refunds = Refunds(Refunder().model)
    history = SqliteHistory(tmp_path / "history.sqlite3")
    events: list[tuple[str, Any]] = []

    async def show(thread_id: str, event: Any) -> None:
        events.append((thread_id, event))

    report = await aserve_one_answer(
        refunds, history, tmp_path, "order-2", stream=show, user_prompt="and list what is left"
    )
    assert (report.acknowledged, report.retried) == (2, 0)
    assert outputs(events)[1] == ("order-2", "done; asked: ['and list what is left']")


async def test_aserve_sends_each_answer_its_own_prompt_without_streaming(tmp_path: Path) -> None:
    refunds = Refunds(Refunder().model)
    history = SqliteHistory(tmp_path / "history.sqlite3")

    def prompt(message: Mapping[str, Any]) -> str:
        return f"now report on {message['thread_id']}"

    report = await aserve_one_answer(refunds, history, tmp_path, "order-3", user_prompt=prompt)
    assert (report.acknowledged, report.retried) == (2, 0)
    last = history.load("order-3")[-1]
    assert isinstance(last, ModelResponse)
    assert last.parts == [TextPart("done; asked: ['now report on order-3']")]


def test_serve_refuses_a_user_prompt_that_is_neither_text_nor_a_function(tmp_path: Path) -> None:
    refunds = Refunds(Refunder().model)
    with pytest.raises(TypeError, match=r"user_prompt: expected text or a function"):
        serve(
            refunds.agent,
            SqliteEntry(tmp_path / "in.sqlite3"),
            history=SqliteHistory(tmp_path / "h.sqlite3"),
            user_prompt=3,
        )  # type: ignore[arg-type]
