"""Conformance kit for entry points (re-exported by :mod:`agent_wait.testing`)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from pydantic import ValidationError
from ulid import ULID

from agent_wait.core._entry import (
    MAX_MESSAGE_BYTES,
    DeadLetter,
    EntryPoint,
    Received,
    dead_letter,
)
from agent_wait.core._options import EntryOptions
from agent_wait.testing._options import assert_options_model_matches

_POISON_BODIES: Mapping[str, bytes] = MappingProxyType(
    {
        "not-json": b"not json{ ",
        "not-an-object": b'[1, 2, "%s"]',
        "wrong-field-types": b'{"thread_id": ["%s"], "question_id": 7, "answer": 1}',
        "invalid-utf8": b'{"thread_id": "\xff\xfe %s"}',
        "binary": b"\x00\x01\x02\x03 %s",
        "oversized": b'{"thread_id": "%s", "input": "' + b"x" * MAX_MESSAGE_BYTES + b'"}',
    }
)
"""The poison cases' bodies by kind (``%s``: a unique part, so each test finds its own)."""


class EntryContract:
    """The behaviour every entry point must have. Subclass it as ``Test<YourEntryPoint>``.

    Override :meth:`make_entry`: a fresh entry point on an empty queue, built with the
    options the kit passes (``visibility_timeout``, ``max_attempts``, ``retry_delay``).
    Override :meth:`send_raw` too, so the poison cases run: without it they are skipped.
    """

    visibility_timeout = 1.0
    """Seconds of lease the kit asks for; raise it for a transport that cannot go this low."""

    tells_oldest_waiting = False
    """True for an entry point whose ``oldest_waiting()`` must tell the age of the oldest
    message. Left False, one that answers a number is checked as telling, and one that
    answers None throughout passes as one that cannot tell (never a guess)."""

    def make_entry(
        self, *, visibility_timeout: float, max_attempts: int, retry_delay: float
    ) -> EntryPoint:
        """Build a fresh entry point with these settings (abstract)."""
        raise NotImplementedError(f"{type(self).__name__} must implement make_entry()")

    def make_unreachable_entry(self) -> EntryPoint | None:
        """An entry point whose server cannot be reached (a port nothing listens on).

        Default: None, and the kit skips its check of connection errors.
        """
        return None

    @pytest.fixture
    def contract_entry(self) -> Iterator[EntryPoint]:
        """A fresh entry point (3 attempts, no retry delay), closed after the test."""
        built = self.make_entry(
            visibility_timeout=self.visibility_timeout, max_attempts=3, retry_delay=0.0
        )
        yield built
        built.close()

    def send_raw(self, entry: EntryPoint, body: bytes, thread_id: str) -> None:
        """Put ``body`` on the entry point's queue as is, unchecked, as another program could.

        ``thread_id`` is what the transport carries beside the body, where it carries one (a
        message group, a column, a subject): the body itself may have none. Call
        ``pytest.skip(reason)`` for a body the transport cannot carry at all (a PostgreSQL text
        column holds no NUL, NATS refuses a payload over its ``max_payload``). Without an
        override, the poison cases are skipped.
        """
        pytest.skip(f"{type(self).__name__} has no send_raw(): the poison cases need it")

    def _thread(self) -> str:
        return f"entry-contract-{ULID()}"

    def _answer(self, thread: str, n: int) -> dict[str, Any]:
        return {
            "thread_id": thread,
            "question_id": f"q{n}",
            "answer": {"action": "approve", "n": n},
        }

    def _receive(self, entry: EntryPoint, count: int = 10, wait: float = 2.0) -> list[Received]:
        return entry.receive(count, wait=wait)

    def test_options_model_matches_the_constructor(self, contract_entry: EntryPoint) -> None:
        """If this fails, the entry point's options model is missing or out of step with it.

        Set a class attribute ``options_model`` to a subclass of
        :class:`agent_wait.core.EntryOptions` with one field per keyword argument of the
        constructor (an ``X_env`` argument of a field ``X`` needs no field of its own), and
        validate the arguments with ``options_model.parse(self.name, {...})``. ``entry(name,
        ...)`` and the ``[entry]`` table are checked against the model before the constructor
        is called, and ``agent-wait plugins --json`` prints its JSON Schema.
        """
        assert_options_model_matches(type(contract_entry), EntryOptions)

    def test_an_unreachable_server_raises_connection_error(self) -> None:
        """If this fails, a worker takes a broker outage for a bug, and stops.

        Every call of the host side raises ``ConnectionError`` (or ``TimeoutError``) when the
        transport cannot be reached, whatever the SDK raises, and the next call reconnects:
        wrap the SDK's connection errors with
        :func:`agent_wait.core.transport.connection_errors`. Return such an entry point from
        :meth:`make_unreachable_entry` to run this check.
        """
        unreachable = self.make_unreachable_entry()
        if unreachable is None:
            pytest.skip("make_unreachable_entry() returns None: no unreachable server to try")
        try:
            with pytest.raises((ConnectionError, TimeoutError)):
                unreachable.receive(1, wait=0.0)
        finally:
            unreachable.close()

    def test_send_then_receive_round_trips(self, contract_entry: EntryPoint) -> None:
        """If this fails, a message is changed between the consumer and the host."""
        thread = self._thread()
        start = {"thread_id": thread, "input": {"text": "Rückerstattung ✓", "n": [1, None]}}
        contract_entry.send(start)
        [received] = self._receive(contract_entry)
        assert received.message == start
        assert (received.thread_id, received.attempt) == (thread, 1)
        assert contract_entry.ack(received)
        assert self._receive(contract_entry, wait=0.0) == []

    def test_async_send_and_receive(self, contract_entry: EntryPoint) -> None:
        """If this fails, ``asend``/``areceive`` do not reach the same queue."""
        thread = self._thread()

        async def run() -> list[Received]:
            await contract_entry.asend(self._answer(thread, 1))
            return await contract_entry.areceive(1, 2.0)

        [received] = asyncio.run(run())
        assert received.message == self._answer(thread, 1)
        assert contract_entry.ack(received)

    def test_a_malformed_message_is_refused_before_sending(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, a message no host can handle gets into the queue."""
        with pytest.raises(ValidationError, match="thread_id"):
            contract_entry.send({"question_id": "q1", "answer": 1})
        assert self._receive(contract_entry, wait=0.0) == []

    def test_one_thread_at_a_time_in_order_threads_in_parallel(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, two messages of one thread could be handled at once or out of order.

        One receive may hand out several messages of a thread (an SQS FIFO batch), in send
        order from its first; none of the thread comes in another receive while they are held.
        """
        first, second = self._thread(), self._thread()
        for n in range(3):
            contract_entry.send(self._answer(first, n))
        contract_entry.send(self._answer(second, 0))
        batch = self._receive(contract_entry)
        later = self._receive(contract_entry, wait=0.0)
        assert not {r.thread_id for r in batch} & {r.thread_id for r in later}, (
            "a thread's later message was handed out while an earlier one was in hand"
        )
        batch += later
        seen: dict[str, list[str]] = {first: [], second: []}
        while batch:
            for received in batch:
                seen[received.thread_id].append(received.message["question_id"])
            for received in batch:
                assert contract_entry.ack(received)
            complete = len(seen[first]) == 3 and len(seen[second]) == 1
            batch = self._receive(contract_entry, wait=0.0 if complete else 2.0)
        assert seen == {first: ["q0", "q1", "q2"], second: ["q0"]}, (
            f"not handed out once each, in order: {seen}"
        )

    def test_a_released_message_comes_back_before_its_thread_goes_on(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, a message given back unhandled is lost, held or overtaken.

        Skipped when the entry point keeps the default ``release`` (the lease runs out).
        """
        if type(contract_entry).release is EntryPoint.release:
            pytest.skip("release is not implemented: a given-back message waits for its lease")
        thread = self._thread()
        for n in range(2):
            contract_entry.send(self._answer(thread, n))
        [received] = self._receive(contract_entry, count=1)
        assert contract_entry.release(received)
        assert not contract_entry.release(received), "released twice"
        batch = self._receive(contract_entry)
        assert batch[0].id == received.id
        assert batch[0].message == received.message
        assert batch[0].attempt == received.attempt + 1, "the released delivery was not counted"
        for held in batch:
            assert contract_entry.ack(held)

    def test_a_release_after_the_lease_ran_out_changes_nothing(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, a host whose lease ran out takes the message from its new holder.

        Skipped when the entry point keeps the default ``release``.
        """
        if type(contract_entry).release is EntryPoint.release:
            pytest.skip("release is not implemented: a given-back message waits for its lease")
        contract_entry.send(self._answer(self._thread(), 1))
        [first] = self._receive(contract_entry)
        time.sleep(self.visibility_timeout + 0.1)
        [again] = self._receive(contract_entry)
        assert not contract_entry.release(first), "released with a lease that ran out"
        assert self._receive(contract_entry, wait=0.0) == [], "handed out while its holder has it"
        assert contract_entry.ack(again)

    def test_an_unacknowledged_message_comes_back_after_its_lease(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, a host that dies mid-message loses the message."""
        thread = self._thread()
        contract_entry.send(self._answer(thread, 1))
        [first] = self._receive(contract_entry)
        assert self._receive(contract_entry, wait=0.0) == [], "handed out twice within its lease"
        time.sleep(self.visibility_timeout + 0.1)
        [again] = self._receive(contract_entry)
        assert (again.id, again.attempt, again.message) == (first.id, 2, first.message)
        assert not contract_entry.ack(first), "a lease that ran out still acknowledged"
        assert contract_entry.ack(again)

    def test_extend_keeps_the_lease(self, contract_entry: EntryPoint) -> None:
        """If this fails, a long-running handler loses its message to another host."""
        contract_entry.send(self._answer(self._thread(), 1))
        [received] = self._receive(contract_entry)
        for _ in range(3):
            time.sleep(self.visibility_timeout / 4)
            assert contract_entry.extend(received)
        assert self._receive(contract_entry, wait=0.0) == []
        assert contract_entry.ack(received)

    def test_oldest_waiting_ages_the_oldest_message_not_yet_settled(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, an operator's lag figure (``agent_wait.worker.oldest_waiting``) lies.

        An entry point that tells (:attr:`tells_oldest_waiting`, or one that answers a number
        once messages wait) says None on an empty queue, a number of seconds (not negative)
        while any message is neither acknowledged nor dead-lettered (in a lease too), and None
        again once every one is settled. One that cannot tell says None throughout.
        """
        assert contract_entry.oldest_waiting() is None
        first, second = self._thread(), self._thread()
        contract_entry.send(self._answer(first, 1))
        contract_entry.send(self._answer(second, 2))
        # Kits written before this check set no flag: a number is taken as telling.
        told = self.tells_oldest_waiting or contract_entry.oldest_waiting() is not None

        def waiting() -> None:
            age = contract_entry.oldest_waiting()
            if told:
                assert age is not None
                assert 0.0 <= age < 3600.0, age
            else:
                assert age is None, f"{type(contract_entry).__name__} says it cannot tell: {age}"

        waiting()
        received = self._receive(contract_entry)
        for _ in range(5):  # one receive may hand out what one shard holds, not both messages
            if len(received) >= 2:
                break
            received += self._receive(contract_entry)
        assert sorted(r.thread_id for r in received) == sorted((first, second))
        waiting()  # leased, not settled
        assert contract_entry.ack(received[0])
        waiting()
        assert contract_entry.fail(received[1], "RuntimeError: given up", retry=False)
        assert contract_entry.oldest_waiting() is None

    def test_failures_are_retried_then_dead_lettered_never_dropped(
        self, contract_entry: EntryPoint, caplog: pytest.LogCaptureFixture
    ) -> None:
        """If this fails, a message that keeps failing is lost or retried forever."""
        thread = self._thread()
        message = self._answer(thread, 1)
        contract_entry.send(message)
        contract_entry.send(self._answer(thread, 2))
        for attempt in (1, 2, 3):
            [received] = self._receive(contract_entry, count=1)
            assert (received.message, received.attempt) == (message, attempt)
            dead = contract_entry.fail(received, f"RuntimeError: attempt {attempt} failed")
            assert dead == (attempt == 3)
        [dead_letter] = [d for d in contract_entry.dead_letters() if d.thread_id == thread]
        assert (dead_letter.message, dead_letter.attempts) == (message, 3)
        assert dead_letter.error == "RuntimeError: attempt 3 failed"
        assert any(
            record.levelname == "ERROR" and "dead-lettered" in record.getMessage()
            for record in caplog.records
        )
        # The thread moves on past its dead letter.
        [following] = self._receive(contract_entry)
        assert following.message["question_id"] == "q2"
        assert contract_entry.ack(following)
        # And the dead letter can be put back.
        assert contract_entry.redrive(dead_letter.id)
        [redriven] = self._receive(contract_entry)
        assert (redriven.message, redriven.attempt) == (message, 1)
        assert contract_entry.ack(redriven)

    def test_a_poison_message_is_dead_lettered_at_once(self, contract_entry: EntryPoint) -> None:
        """If this fails, a message that can never succeed is retried anyway."""
        thread = self._thread()
        contract_entry.send(self._answer(thread, 1))
        [received] = self._receive(contract_entry)
        assert contract_entry.fail(received, "ValidationError: bad", retry=False)
        assert [d.attempts for d in contract_entry.dead_letters() if d.thread_id == thread] == [1]

    def test_a_message_never_acknowledged_is_dead_lettered(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, a message that crashes every host is handed out forever."""
        thread = self._thread()
        contract_entry.send(self._answer(thread, 1))
        for attempt in (1, 2, 3):
            [received] = self._receive(contract_entry)
            assert received.attempt == attempt
            time.sleep(self.visibility_timeout + 0.1)
        assert self._receive(contract_entry, wait=0.0) == []
        [dead] = [d for d in contract_entry.dead_letters() if d.thread_id == thread]
        assert dead.attempts == 3
        assert "never acknowledged" in dead.error

    # -- poison: bodies no host can handle, put on the queue by something else than send() --

    def _poison(self, kind: str) -> bytes:
        template = _POISON_BODIES[kind]
        unique = str(ULID()).encode()
        return template.replace(b"%s", unique) if b"%s" in template else template + unique

    def _dead_letter_of(self, entry: EntryPoint, body: bytes) -> DeadLetter:
        expected = dead_letter("", "", body, 0, "", "")
        found = [
            letter
            for letter in entry.dead_letters()
            if (letter.body, letter.message) == (expected.body, expected.message)
        ]
        assert len(found) == 1, f"the poison message is not (once) in the dead letters: {found}"
        return found[0]

    @pytest.mark.parametrize("kind", sorted(_POISON_BODIES))
    def test_poison_is_dead_lettered_at_once_and_its_thread_goes_on(
        self, contract_entry: EntryPoint, kind: str
    ) -> None:
        """If this fails, one malformed message stops a worker or holds other messages back.

        A body that is not UTF-8, not JSON, not a JSON object, not a start message or an
        answer, or larger than ``MAX_MESSAGE_BYTES`` is never handed out: the entry point
        dead-letters it at once (one attempt, ``PoisonMessage: <reason>``) and hands out the
        rest, its thread's next message after it, in order. Read bodies with
        :func:`agent_wait.core.transport.read_message` and build dead letters with
        :func:`agent_wait.core.transport.dead_letter`.
        """
        thread, other = self._thread(), self._thread()
        body = self._poison(kind)
        contract_entry.send(self._answer(thread, 0))
        self.send_raw(contract_entry, body, thread)
        contract_entry.send(self._answer(thread, 1))
        contract_entry.send(self._answer(other, 0))
        seen: dict[str, list[object]] = {thread: [], other: []}
        for _ in range(20):
            if len(seen[thread]) == 2 and seen[other]:
                break
            for received in self._receive(contract_entry):
                seen.setdefault(received.thread_id, []).append(received.message.get("question_id"))
                assert contract_entry.ack(received)
        assert seen == {thread: ["q0", "q1"], other: ["q0"]}, (
            f"not the good messages once each, in order, without the poison: {seen}"
        )
        letter = self._dead_letter_of(contract_entry, body)
        assert letter.attempts == 1, "retried before it was dead-lettered"
        assert letter.error.startswith("PoisonMessage: "), letter.error

    def test_a_redriven_poison_message_is_dead_lettered_again(
        self, contract_entry: EntryPoint
    ) -> None:
        """If this fails, redriving a poison message hands it to a host, or loses it."""
        thread = self._thread()
        body = self._poison("not-json")
        self.send_raw(contract_entry, body, thread)
        contract_entry.send(self._answer(thread, 1))
        [good] = self._receive(contract_entry)
        assert contract_entry.ack(good)
        letter = self._dead_letter_of(contract_entry, body)
        assert contract_entry.redrive(letter.id)
        # Its next receive reads it again and dead-letters it again, at once.
        contract_entry.send(self._answer(thread, 2))
        [after] = self._receive(contract_entry)
        assert after.message == self._answer(thread, 2)
        assert contract_entry.ack(after)
        again = self._dead_letter_of(contract_entry, body)
        assert (again.attempts, again.error) == (1, letter.error)
