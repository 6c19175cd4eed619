"""A server restarted while a task waits learns its question again from the host."""

from __future__ import annotations

from functools import partial
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.server.tasks import InMemoryTaskStore

from agent_wait.a2a import a2a_app, agent_card
from tests.a2a.refund_server import README_URL, readme_example
from tests.a2a.test_bridge import asked, result, send

pytest.importorskip("agent_wait.langgraph", reason="needs agent-wait-langgraph installed")


async def test_an_answer_after_a_restart_is_checked_and_resumes_the_run() -> None:
    from agent_wait.langgraph import ahandle_message

    namespace: dict[str, Any] = {}
    exec(compile(readme_example(), "README.md", "exec"), namespace)
    graph = namespace["graph"]  # its checkpointer and the task store outlive the first server
    tasks = InMemoryTaskStore()
    card = agent_card("refunds", README_URL)

    def serving() -> httpx.AsyncClient:
        app = a2a_app(partial(ahandle_message, graph, announce=[]), card, task_store=tasks)
        return httpx.AsyncClient(
            transport=httpx.ASGITransport(app=app), base_url=README_URL, timeout=60
        )

    async with serving() as http:
        first = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        task = await send(first, {"amount": 75})
    question_id = asked(task)["question_id"]

    async with serving() as http:
        second = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        refused = await send(second, {"approved": "no"}, task)
        assert asked(refused)["question_id"] == question_id
        assert asked(refused)["refused"].startswith("answer.approved:")
        done = await send(second, {"approved": True}, refused)

    assert result(done) == {"amount": 75, "approved": True}
