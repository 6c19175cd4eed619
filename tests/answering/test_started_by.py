"""Separation of duties for a run started through a worker: the start message names the starter.

A start message with ``started_by`` (an optional field of the message) makes every question the
run asks record it, so ``agent-wait answer`` refuses that person's approval; someone else's
goes through and the run resumes. Without the field nothing is recorded or checked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_wait.core import default_entry
from agent_wait.langgraph import serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import transfer_graph

Deploy = Callable[..., Deployment]


def start(host: Deployment, thread: str, **message: Any) -> str:
    with default_entry() as messages:
        messages.send({"thread_id": thread, "input": {"account": "DE44", "amount": 9}, **message})
    assert host.handled(thread) == "started"
    return host.question(thread).envelope.question_id


def test_the_starter_named_in_the_start_message_cannot_approve(deploy: Deploy) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    question_id = start(host, "started-1", started_by="alice")
    assert host.stored(question_id).envelope.started_by == "alice"
    refused = host.answer(question_id, "approve")  # --by alice
    assert refused.returncode == 1
    assert "alice (claimed) may not answer it: they started the run that asked it" in (
        refused.stderr
    )
    assert host.stored(question_id).is_open
    done = host.cli("answer", question_id, "approve", "--by", "bob")
    assert done.returncode == 0, done.stderr
    assert host.handled("started-1") == "resumed"
    assert ran == [("DE44", 9)]


def test_a_start_message_without_it_records_no_starter(deploy: Deploy) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    question_id = start(host, "started-2")
    assert host.stored(question_id).envelope.started_by is None
    done = host.answer(question_id, "approve")
    assert done.returncode == 0, done.stderr
    assert host.handled("started-2") == "resumed"
