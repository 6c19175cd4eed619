"""What the conformance kits share: sample questions, a plugin, the policy, clock and races."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Generator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TypeVar

from agent_wait.core._models import Question, Source
from agent_wait.core._plugins import registry
from agent_wait.core._policy import WaitPolicy

_R = TypeVar("_R")

REPLY_TO = {"kind": "queue", "url": "https://example.invalid/answers"}


def sample_questions(count: int, *, prefix: str | None = None) -> list[Question]:
    """Questions exercising every envelope field (unicode, nested args, tags, correlation).

    Question ids are unique per call unless ``prefix`` is given, so tests against a shared,
    long-lived transport never see each other's questions.
    """
    base = prefix or f"contract-{uuid.uuid4().hex[:12]}"
    questions: list[Question] = []
    for index in range(count):
        policy = WaitPolicy.model_validate(
            {
                "timeout": "P3D",
                "default": {"action": "reject", "reason": "no response within P3D"},
                "answer_ttl": "PT15M",
                "tags": {"approver_group": "finance", "priority": str(index)},
                "correlation": {"provider": "contract", "id": f"job-{index}"}
                if index % 2
                else None,
            }
        )
        questions.append(
            Question(
                question_id=f"{base}-{index}",
                question={
                    "function": "issue_refund",
                    "args": {
                        "order_id": f"order-{index}",
                        "amount": 41000 + index,
                        "note": "Rückerstattung € ✓",
                    },
                },
                policy=policy,
                source=Source(function="issue_refund"),
            )
        )
    return questions


@contextmanager
def registered_plugin(plugin: object, name: str) -> Generator[object]:
    """Register a plugin (a module or an object with ``@hookimpl`` methods) for a block.

    Example:
        ::

            with registered_plugin(MyHooks(), "my-hooks"):
                report = publish(questions, "thread-1", announce=MemoryAnnounce())
    """
    reg = registry()
    reg.register(plugin, name)
    try:
        yield plugin
    finally:
        reg.unregister(name)


# The adapter and host kits run issue_refund(order_id, amount) under this policy, at this time.
NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)
KIT_POLICY = WaitPolicy(
    timeout="P3D",
    default={"action": "reject", "reason": "no response within P3D"},
    answer_ttl="PT15M",
    allowed_actions=("approve", "reject", "escalate"),
    tags={"approver_group": "finance", "region": "eu"},
    correlation={"provider": "contract", "id": "re_4471"},
)


def clock() -> datetime:
    return NOW


def race(racers: int, attempt: Callable[[int], _R], what: str) -> dict[int, _R]:
    """Run ``attempt(index)`` in ``racers`` threads released at once; every one must return."""
    barrier = threading.Barrier(racers)
    results: dict[int, _R] = {}

    def run(index: int) -> None:
        barrier.wait()
        results[index] = attempt(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(racers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == racers, f"a racing {what} raised"
    return results
