"""Fault soak: the host loop under failing announcers, end to end.

A host processes an inbound queue of start and answer messages with ``handle_message(...,
strict=True)`` for LangGraph and Pydantic AI threads (real frameworks, offline models). Every
question goes to two announcers, SQS on a real ``moto_server`` process and a signed webhook on a
real HTTP receiver, and both fail at random: moto is SIGKILLed and restarted empty (its queue
missing until recreated) or SIGSTOPped (requests time out and are processed late); the receiver
answers 500, drops the connection, hangs past the timeout, processes the envelope and still
answers 500, or stops listening. A publish that fails raises ``AnnounceFailed``; the host then
does not acknowledge the message, and the queue redelivers it after a visibility delay.

The inbound queue behaves like an SQS FIFO queue grouped by thread id, the host setup
``handle_message`` documents ("one message per thread at a time"): an unacknowledged message
stays at the head of its thread's group, and that thread's later messages wait behind it.

Two consumers read what the transports accepted: one drains the SQS queue through moto, the
other is the webhook receiver (signature verified). The SQS consumer also answers, from the
``reply_with`` it received: sometimes at once, sometimes late, sometimes twice, and
sometimes with a different answer after the first.

After the chaos phase (bounded by a count of scheduled faults and a time budget) the faults stop
and the system must drain; then:

- every question a framework parked on reached both consumers at least once;
- deduplicating on ``type`` + ``thread_id`` + ``question_id`` yields exactly the set of questions asked;
- no answer was applied twice, and the first one stands; no body ran twice.

The run is reproducible from its seed (printed, and in every failure message):
``AGENT_WAIT_SOAK_SEED=<seed> AGENT_WAIT_SOAK_RUNS=<n> pytest tests/reliability/test_soak.py -s``.
A run is one agent thread (one start message, two questions).
"""

from __future__ import annotations

import os
import random
import time
from collections import Counter, deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from agent_wait.core import (
    AnnounceFailed,
    BaseAnnounce,
    Outcome,
    WaitEnvelope,
    announcer,
)
from tests.reliability.agents import (
    LangGraphHost,
    Ledger,
    PydanticAiHost,
    StrandsHost,
    ThreadHost,
)
from tests.reliability.servers import FaultyReceiver, KillableMoto, sqs_messages

RUNS = int(os.environ.get("AGENT_WAIT_SOAK_RUNS", "150"))
SEED = int(os.environ.get("AGENT_WAIT_SOAK_SEED") or random.SystemRandom().randrange(2**32))
# The chaos phase ends after this many seconds even if faults are still scheduled; the calm phase
# that follows is bounded by a step count, not by time.
CHAOS_SECONDS = float(os.environ.get("AGENT_WAIT_SOAK_SECONDS") or max(30.0, RUNS * 0.2))
WEBHOOK_SECRET = "whsec_c29hay10ZXN0LXNpZ25pbmcta2V5LTIwMjY="
QUEUE = "approvals"
RECEIVER_WEIGHTS = {
    "ok": 0.85,
    "error": 0.05,
    "processed_error": 0.03,
    "drop": 0.04,
    "hang": 0.015,
}


@dataclass
class Item:
    """One inbound message of the host's queue."""

    thread_id: str
    message: dict[str, Any]
    deliveries: int = 0


class ThreadFifo:
    """An SQS-FIFO-like inbound queue: groups by thread id, strict order within a group.

    ``receive`` hands out the oldest message whose group is not waiting out a visibility delay;
    a message that is not acknowledged becomes visible again after the delay, still first in
    its group.
    """

    def __init__(self) -> None:
        self.groups: dict[str, deque[Item]] = {}
        self.hidden_until: dict[str, int] = {}
        self._order: list[str] = []

    def send(self, item: Item) -> None:
        """Append a message to its thread's group."""
        group = self.groups.setdefault(item.thread_id, deque())
        if not group:
            self._order.append(item.thread_id)
        group.append(item)

    def receive(self, step: int) -> Item | None:
        """The next visible message (it stays queued until :meth:`ack`)."""
        for thread_id in self._order:
            if self.hidden_until.get(thread_id, 0) <= step:
                return self.groups[thread_id][0]
        return None

    def ack(self, item: Item) -> None:
        """Delete a processed message; the group's next message becomes visible."""
        group = self.groups[item.thread_id]
        assert group[0] is item
        group.popleft()
        self._order.remove(item.thread_id)
        if group:
            self._order.append(item.thread_id)

    def redeliver_after(self, item: Item, step: int) -> None:
        """Leave a message unacknowledged: its group is hidden until ``step``."""
        self.hidden_until[item.thread_id] = step

    def __len__(self) -> int:
        return sum(len(g) for g in self.groups.values())


class SqsConsumer:
    """Drains the approvals queue through moto, as a consumer service would."""

    def __init__(self, endpoint: str) -> None:
        self.client = boto3.client(
            "sqs",
            endpoint_url=endpoint,
            config=Config(connect_timeout=2, read_timeout=5, retries={"total_max_attempts": 3}),
        )
        self.queue_url = ""
        self.envelopes: list[dict[str, Any]] = []

    def create_queue(self) -> str:
        """Create the queue (again, after a restart) and return its URL."""
        self.queue_url = self.client.create_queue(QueueName=QUEUE)["QueueUrl"]
        return self.queue_url

    def poll(self) -> list[dict[str, Any]]:
        """Receive, delete and return every visible envelope."""
        received = sqs_messages(self.client, self.queue_url)
        self.envelopes.extend(received)
        return received


@dataclass
class Planned:
    """What the answering consumer decided for one question."""

    first: Any
    other: Any


class Approver:
    """The answering consumer: dedupe on type + question_id, reply with reply_with."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.seen: set[str] = set()
        self.plans: dict[str, Planned] = {}
        self.stats: Counter[str] = Counter()

    def on_envelope(self, envelope: dict[str, Any], step: int) -> list[tuple[int, Item]]:
        """The answers to send for a newly seen question, each with the step it is sent at."""
        key = f"{envelope['type']}:{envelope['question_id']}"
        if key in self.seen:
            self.stats["deduplicated"] += 1
            return []
        self.seen.add(key)
        function = envelope["question"]["function"]
        if function == "issue_refund":
            options = [{"action": "approve"}, {"action": "reject", "reason": "over budget"}]
        else:
            options = [{"action": "send", "note": f"n{len(self.seen)}"}, {"action": "skip"}]
        first = options[0] if self.rng.random() < 0.7 else options[1]
        other = options[1] if first is options[0] else options[0]
        self.plans[envelope["question_id"]] = Planned(first, other)
        reply = envelope["reply_with"]
        thread_id = reply["thread_id"]

        def answer(value: Any) -> Item:
            return Item(thread_id, {**reply, "answer": value})

        sent_at = step
        if self.rng.random() < 0.25:
            sent_at += self.rng.randint(5, 40)
            self.stats["late"] += 1
        sends = [(sent_at, answer(first))]
        if self.rng.random() < 0.25:
            sends.append((sent_at + self.rng.randint(0, 40), answer(first)))
            self.stats["duplicate_sent"] += 1
        if self.rng.random() < 0.15:
            sends.append((sent_at + self.rng.randint(1, 40), answer(other)))
            self.stats["different_sent"] += 1
        return sends


class Chaos:
    """Schedules and applies the faults; ``calm`` ends them and restores every service."""

    def __init__(
        self,
        rng: random.Random,
        moto: KillableMoto,
        receiver: FaultyReceiver,
        consumer: SqsConsumer,
        runs: int,
    ) -> None:
        self.rng = rng
        self.moto = moto
        self.receiver = receiver
        self.consumer = consumer
        # Faults are due early in the run (a run takes about four steps), so each one happens
        # while there is traffic; one that falls due while impossible waits for its chance.
        window = range(5, max(40, runs * 2))
        self.due = {
            "kill": sorted(rng.sample(window, max(2, runs // 60))),
            "pause": sorted(rng.sample(window, max(3, runs // 40))),
            "outage": sorted(rng.sample(window, max(3, runs // 30))),
        }
        self.restart_at: int | None = None
        self.recreate_at: int | None = None
        self.resume_at: int | None = None
        self.listen_at: int | None = None
        self.stats: Counter[str] = Counter()
        self.on = True

    @property
    def all_fired(self) -> bool:
        """Every fault that was due has happened."""
        return not any(self.due.values())

    @property
    def queue_ready(self) -> bool:
        """The queue exists on a running, unpaused server."""
        return self.moto.up and self.recreate_at is None

    def tick(self, step: int) -> None:
        """Apply what is due at ``step``."""
        if not self.on:
            return
        moto = self.moto
        if self.restart_at is not None and step >= self.restart_at:
            moto.restart()
            self.restart_at = None
            self.recreate_at = step + self.rng.randint(0, 3)
            self.stats["moto_restarted"] += 1
        if self.recreate_at is not None and moto.up and step >= self.recreate_at:
            self.consumer.create_queue()
            self.recreate_at = None
        if self.resume_at is not None and step >= self.resume_at:
            moto.resume()
            self.resume_at = None
        if self._fires("kill", step, moto.up and self.recreate_at is None):
            # What the queue accepted is durable on SQS; moto keeps it in memory, so the consumer
            # takes it before the process dies.
            self.consumer.poll()
            moto.kill()
            self.restart_at = step + self.rng.randint(2, 8)
            self.stats["moto_killed"] += 1
        elif self._fires("pause", step, moto.up):
            moto.pause()
            self.resume_at = step + self.rng.randint(1, 2)
            self.stats["moto_paused"] += 1
        if self.listen_at is not None and step >= self.listen_at:
            self.receiver.up_again()
            self.listen_at = None
        elif self._fires("outage", step, self.receiver.up):
            self.receiver.down()
            self.listen_at = step + self.rng.randint(2, 10)
            self.stats["receiver_down"] += 1

    def _fires(self, fault: str, step: int, possible: bool) -> bool:
        pending = self.due[fault]
        if not (pending and pending[0] <= step and possible):
            return False
        pending.pop(0)
        return True

    def calm(self) -> None:
        """End every fault: all services up, the queue present, the receiver always answering 200."""
        self.on = False
        if self.resume_at is not None:
            self.moto.resume()
        if self.restart_at is not None:
            self.moto.restart()
            self.recreate_at = 0
        if self.recreate_at is not None:
            self.consumer.create_queue()
        self.restart_at = self.recreate_at = self.resume_at = None
        if not self.receiver.up:
            self.receiver.up_again()
        self.listen_at = None
        self.receiver.faults = False


@dataclass
class Soak:
    """The host loop and everything it observed."""

    seed: int
    runs: int
    hosts: dict[str, ThreadHost]
    announce: list[BaseAnnounce]
    chaos: Chaos
    consumer: SqsConsumer
    receiver: FaultyReceiver
    approver: Approver
    rng: random.Random
    inbox: ThreadFifo = field(default_factory=ThreadFifo)
    outgoing: list[tuple[int, Item]] = field(default_factory=list[tuple[int, Item]])
    asked: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    first_applied: dict[str, Any] = field(default_factory=dict[str, Any])
    outcomes: Counter[str] = field(default_factory=Counter[str])
    unexpected: list[str] = field(default_factory=list[str])
    steps: int = 0

    def host_of(self, thread_id: str) -> ThreadHost:
        return self.hosts[thread_id.split("-", 1)[0]]

    def start(self) -> None:
        """Queue one start message per run (some sent twice, as a retrying producer would)."""
        frameworks = sorted(self.hosts)
        threads = [
            f"{frameworks[index % len(frameworks)]}-{index:04d}" for index in range(self.runs)
        ]
        self.rng.shuffle(threads)
        for number, thread_id in enumerate(threads):
            message = {
                "thread_id": thread_id,
                "input": {"order_id": thread_id, "amount": 1000 + number},
            }
            self.inbox.send(Item(thread_id, message))
            if self.rng.random() < 0.1:
                self.inbox.send(Item(thread_id, dict(message)))
                self.outcomes["start_sent_twice"] += 1
            self.asked[thread_id] = set()

    def step(self) -> bool:
        """Process one inbound message; False when nothing is left to do."""
        self.steps += 1
        step = self.steps
        self.chaos.tick(step)
        self._send_due(step)
        item = self.inbox.receive(step)
        if item is None:
            # Nothing visible: wait out a visibility delay or a late answer, if there is one.
            return bool(self.outgoing) or bool(len(self.inbox))
        host = self.host_of(item.thread_id)
        item.deliveries += 1
        if item.deliveries > 1:
            self.outcomes["redelivered"] += 1
        question_id = item.message.get("question_id")
        if question_id is not None and question_id in host.pending(item.thread_id):
            self.first_applied.setdefault(question_id, item.message["answer"])
        try:
            handled = host.handle(item.message, self.announce)
        except AnnounceFailed:
            self.outcomes["announce_failed"] += 1
            self.inbox.redeliver_after(item, step + self.rng.randint(1, 6))
        except Exception as error:  # collected, and reported with SEED
            self.unexpected.append(f"step {step} {item.message!r}: {type(error).__name__}: {error}")
            self.inbox.ack(item)
        else:
            self.outcomes[handled.outcome.value] += 1
            if handled.outcome in (Outcome.UNKNOWN_QUESTION, Outcome.INVALID_ANSWER):
                self.unexpected.append(f"step {step} {item.message!r}: {handled.detail}")
            self.inbox.ack(item)
        self.asked[item.thread_id] |= host.pending(item.thread_id)
        self._consume(step)
        return True

    def _send_due(self, step: int) -> None:
        due = [entry for entry in self.outgoing if entry[0] <= step]
        self.outgoing = [entry for entry in self.outgoing if entry[0] > step]
        for _, item in sorted(due, key=lambda entry: entry[0]):
            self.inbox.send(item)

    def _consume(self, step: int) -> None:
        if self.chaos.queue_ready:
            try:
                fresh = self.consumer.poll()
            except (BotoCoreError, ClientError):
                fresh = []  # the consumer retries at its next poll
            for envelope in fresh:
                self.outgoing.extend(self.approver.on_envelope(envelope, step))

    def summary(self) -> str:
        return (
            f"seed={self.seed} runs={self.runs} steps={self.steps} outcomes={dict(self.outcomes)} "
            f"chaos={dict(self.chaos.stats)} receiver={dict(self.receiver.counts)} "
            f"consumer={dict(self.approver.stats)}"
        )


def _key(thread_id: str, question_id: str) -> str:
    # What consumers deduplicate on: a question id is unique within its thread.
    return f"wait.created:{thread_id}:{question_id}"


def _keys(envelopes: list[dict[str, Any]]) -> set[str]:
    return {_key(e["thread_id"], e["question_id"]) for e in envelopes}


@pytest.fixture
def moto() -> Iterator[KillableMoto]:
    server = KillableMoto()
    server.start()
    yield server
    server.stop()


@pytest.fixture
def faulty_receiver() -> Iterator[FaultyReceiver]:
    receiver = FaultyReceiver(WEBHOOK_SECRET, SEED, RECEIVER_WEIGHTS, hang_seconds=1.0)
    receiver.start()
    yield receiver
    receiver.stop()


@pytest.mark.integration
@pytest.mark.timeout(max(120, int(CHAOS_SECONDS * 2 + RUNS * 0.5 + 60)))
def test_soak(
    aws_env: None,
    moto: KillableMoto,
    faulty_receiver: FaultyReceiver,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    print(f"\nagent-wait soak: AGENT_WAIT_SOAK_SEED={SEED} AGENT_WAIT_SOAK_RUNS={RUNS}")
    rng = random.Random(SEED)
    consumer = SqsConsumer(moto.url)
    queue_url = consumer.create_queue()
    monkeypatch.setenv("SOAK_WEBHOOK_SECRET", WEBHOOK_SECRET)
    # The host's own clients: short timeouts and no SDK retries, so an outage fails the publish
    # quickly and the queue's redelivery is the retry.
    sqs_client = boto3.client(
        "sqs",
        endpoint_url=moto.url,
        config=Config(connect_timeout=0.5, read_timeout=0.5, retries={"total_max_attempts": 1}),
    )
    announce = [
        announcer("sqs", queue_url=queue_url, client=sqs_client),
        announcer(
            "webhook",
            url=faulty_receiver.url,
            secret_env="SOAK_WEBHOOK_SECRET",
            timeout=0.25,
            retries=1,
            total_timeout=0.8,
            backoff=0.01,
        ),
    ]
    ledger = Ledger()
    soak = Soak(
        seed=SEED,
        runs=RUNS,
        hosts={
            "langgraph": LangGraphHost(ledger),
            "pydantic_ai": PydanticAiHost(ledger),
            "strands": StrandsHost(ledger, tmp_path / "sessions"),
        },
        announce=announce,
        chaos=Chaos(rng, moto, faulty_receiver, consumer, RUNS),
        consumer=consumer,
        receiver=faulty_receiver,
        approver=Approver(random.Random(SEED + 1)),
        rng=rng,
    )
    soak.start()

    deadline = time.monotonic() + CHAOS_SECONDS
    chaos_steps = max(60, RUNS * 4)
    # The deadline shortens the chaos on a slow machine, but not before every fault has happened.
    while (
        soak.steps < chaos_steps
        and (time.monotonic() < deadline or not soak.chaos.all_fired)
        and soak.step()
    ):
        pass
    soak.chaos.calm()
    calm_limit = soak.steps + RUNS * 40
    while soak.steps < calm_limit and soak.step():
        pass
    soak.consumer.poll()
    for announce_item in announce:
        announce_item.close()
    summary = soak.summary()
    print(summary)

    assert not soak.unexpected, f"{summary}\nunexpected: {soak.unexpected[:5]}"
    assert not len(soak.inbox), f"did not drain within the step bound: {summary}"
    assert not soak.outgoing, f"did not drain within the step bound: {summary}"

    expected = {_key(t, q) for t, qs in soak.asked.items() for q in qs}
    # Two questions per run, each asked once: a redelivered message never minted a new id.
    wrong = {t: sorted(qs) for t, qs in soak.asked.items() if len(qs) != 2}
    assert not wrong, f"threads that did not ask exactly two questions: {wrong} ({summary})"
    sqs_keys = _keys(consumer.envelopes)
    webhook_keys = _keys(faulty_receiver.received())
    thread_of = {_key(t, q): t for t, qs in soak.asked.items() for q in qs}
    missing = {k: thread_of[k] for k in sorted(expected - sqs_keys)}
    assert not missing, f"never reached SQS (question: thread): {missing} ({summary})"
    missing = {k: thread_of[k] for k in sorted(expected - webhook_keys)}
    assert not missing, f"never reached the webhook (question: thread): {missing} ({summary})"
    assert sqs_keys == expected, f"SQS got questions nobody asked ({summary})"
    assert webhook_keys == expected, f"the webhook got questions nobody asked ({summary})"

    # What arrived is the contract, and a question is the same question on every republish.
    for envelope in [*consumer.envelopes, *faulty_receiver.received()]:
        parsed = WaitEnvelope.model_validate(envelope)
        assert parsed.question["args"]["order_id"] == parsed.thread_id
    by_key: dict[str, dict[str, Any]] = {}
    for envelope in [*consumer.envelopes, *faulty_receiver.received()]:
        stable = {k: v for k, v in envelope.items() if k not in ("event_id", "expires_at")}
        assert (
            by_key.setdefault(_key(envelope["thread_id"], envelope["question_id"]), stable)
            == stable
        )

    unfinished = [t for t in soak.asked if not soak.host_of(t).finished(t)]
    assert not unfinished, f"threads still parked: {unfinished[:10]} ({summary})"

    # No body ran twice; no answer was applied twice; the first answer stands.
    functions = {e["question_id"]: e["question"]["function"] for e in consumer.envelopes}
    for thread_id, questions in soak.asked.items():
        by_function = {functions[q]: q for q in questions}
        refund, notify = by_function["issue_refund"], by_function["notify_customer"]
        assert refund in soak.first_applied, thread_id
        assert notify in soak.first_applied, thread_id
        approved = soak.first_applied[refund] == {"action": "approve"}
        assert ledger.count("issue_refund", thread_id) == (1 if approved else 0), (
            f"{thread_id}: issue_refund ran {ledger.count('issue_refund', thread_id)} times "
            f"after first answer {soak.first_applied[refund]} ({summary})"
        )
        assert ledger.decisions("notify_customer", thread_id) == [soak.first_applied[notify]], (
            f"{thread_id}: notify_customer got {ledger.decisions('notify_customer', thread_id)}, "
            f"first answer {soak.first_applied[notify]} ({summary})"
        )

    # The faults and the consumer's misbehaviour really happened (else this proves nothing).
    for name, stats in (
        ("moto_killed", soak.chaos.stats),
        ("moto_restarted", soak.chaos.stats),
        ("moto_paused", soak.chaos.stats),
        ("receiver_down", soak.chaos.stats),
        ("error", faulty_receiver.counts),
        ("processed_error", faulty_receiver.counts),
        ("drop", faulty_receiver.counts),
        ("hang", faulty_receiver.counts),
        ("announce_failed", soak.outcomes),
        ("redelivered", soak.outcomes),
        ("duplicate", soak.outcomes),
        ("republished", soak.outcomes),
        ("late", soak.approver.stats),
        ("duplicate_sent", soak.approver.stats),
        ("different_sent", soak.approver.stats),
    ):
        assert stats[name] > 0, f"{name} never happened: {summary}"
    assert faulty_receiver.counts["bad_signature"] == 0, summary
