"""Strict publishing + redelivery, step by step, on each framework's ``handle_message``.

The soak shows these at random; here each case is pinned down. The receiver is a real HTTP
server that stops listening (connection refused) when a publish should fail.

The host contract (every question is published at least once):
a message whose publish failed is not acknowledged and comes back. Whatever the framework did
on its first delivery (ran, resumed, parked on the next question), the redelivery must get the
questions the thread now waits on out, and must not run anything again.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import AnnounceFailed, BaseAnnounce, Outcome, announcer
from tests.reliability.agents import (
    LangGraphHost,
    Ledger,
    PydanticAiHost,
    StrandsHost,
    ThreadHost,
)
from tests.reliability.servers import FaultyReceiver

SECRET = "whsec_cmVkZWxpdmVyeS10ZXN0LXNpZ25pbmcta2V5"


@pytest.fixture
def receiver() -> Iterator[FaultyReceiver]:
    server = FaultyReceiver(SECRET, seed=0, weights={"ok": 1.0})
    server.faults = False
    server.start()
    yield server
    server.stop()


@pytest.fixture
def hook(receiver: FaultyReceiver) -> Iterator[BaseAnnounce]:
    built = announcer("webhook", url=receiver.url, secret=SECRET, retries=0, timeout=2)
    yield built
    built.close()


HostFactory = Callable[[Ledger, Path], ThreadHost]
HOSTS: dict[str, HostFactory] = {
    "langgraph": lambda ledger, _: LangGraphHost(ledger),
    "pydantic_ai": lambda ledger, _: PydanticAiHost(ledger),
    "strands": lambda ledger, tmp: StrandsHost(ledger, tmp / "sessions"),
}


@pytest.fixture(params=sorted(HOSTS))
def host(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[ThreadHost, Ledger]:
    ledger = Ledger()
    return HOSTS[request.param](ledger, tmp_path), ledger


def start(host: ThreadHost) -> dict[str, Any]:
    thread_id = f"{host.framework}-0001"
    return {"thread_id": thread_id, "input": {"order_id": thread_id, "amount": 41000}}


def received_ids(receiver: FaultyReceiver) -> list[str]:
    return [e["question_id"] for e in receiver.received()]


def test_a_start_whose_publish_failed_is_republished_under_the_same_id(
    host: tuple[ThreadHost, Ledger], receiver: FaultyReceiver, hook: BaseAnnounce
) -> None:
    threads, ledger = host
    message = start(threads)
    thread_id = message["thread_id"]
    receiver.down()
    with pytest.raises(AnnounceFailed) as failed:
        threads.handle(message, hook)
    [question_id] = failed.value.report.question_ids
    assert threads.pending(thread_id) == {question_id}
    receiver.up_again()

    redelivered = threads.handle(message, hook)
    assert redelivered.outcome is Outcome.REPUBLISHED
    assert redelivered.question_ids == [question_id]
    assert received_ids(receiver) == [question_id]
    assert ledger.runs == []


def test_an_answer_whose_publish_failed_gets_the_next_question_out_when_redelivered(
    host: tuple[ThreadHost, Ledger],
    receiver: FaultyReceiver,
    hook: BaseAnnounce,
) -> None:
    threads, ledger = host
    message = start(threads)
    thread_id = message["thread_id"]
    [first] = threads.handle(message, hook).question_ids
    answer = {"thread_id": thread_id, "question_id": first, "answer": {"action": "approve"}}

    # The resume runs the refund and parks on the next question, whose publish fails.
    receiver.down()
    with pytest.raises(AnnounceFailed) as failed:
        threads.handle(answer, hook)
    [second] = failed.value.report.question_ids
    assert threads.pending(thread_id) == {second}
    assert ledger.count("issue_refund", thread_id) == 1
    receiver.up_again()

    # The host did not acknowledge the answer; it comes back. Nothing runs again, and the
    # question the thread now waits on is published (else nobody could ever answer it).
    redelivered = threads.handle(answer, hook)
    assert redelivered.outcome is Outcome.DUPLICATE
    assert redelivered.question_ids == [second], (
        f"{threads.framework}: the redelivered answer published {redelivered.question_ids}; "
        f"the thread waits on {second}, which no consumer has seen"
    )
    assert received_ids(receiver) == [first, second]
    assert ledger.count("issue_refund", thread_id) == 1

    done = threads.handle(
        {"thread_id": thread_id, "question_id": second, "answer": {"action": "send"}}, hook
    )
    assert done.outcome is Outcome.RESUMED
    assert threads.finished(thread_id)
    assert ledger.decisions("notify_customer", thread_id) == [{"action": "send"}]
