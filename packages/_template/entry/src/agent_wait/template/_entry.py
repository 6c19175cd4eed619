"""TemplateEntry: a queue in this process's memory, shared by every entry point of one name.

The queue stands in for your broker: replace ``_Queue`` and the bodies of the methods with calls
to its client library (import it here, not in ``_plugin.py``, raise an ImportError naming what to
install when it is missing, and wrap its connection errors with
``agent_wait.core.transport.connection_errors``). What each method must do stays as written: the
entry-point kit checks it.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from agent_wait.core import (
    DeadLetter,
    EntryPoint,
    Received,
    format_utc,
    log_safe,
    parse_message,
)
from agent_wait.core.transport import Poison, check_body_size, dead_letter, read_message
from agent_wait.template._options import TemplateEntryOptions

logger = logging.getLogger("agent_wait.template")


@dataclass
class _Message:
    id: int
    thread_id: str
    body: bytes
    sent: float = field(default_factory=time.monotonic)
    attempts: int = 0
    visible_at: float = 0.0  # time.monotonic(): leased or delayed until then
    receipt: str | None = None
    error: str | None = None
    dead_at: str | None = None  # set while dead-lettered


@dataclass
class _Queue:
    """Messages by id (which is send order) under one lock; receivers wait on ``changed``."""

    changed: threading.Condition = field(default_factory=threading.Condition)
    messages: dict[int, _Message] = field(default_factory=dict[int, _Message])
    ids: itertools.count[int] = field(default_factory=itertools.count)


_QUEUES: dict[str, _Queue] = {}
_QUEUES_LOCK = threading.Lock()


def _queue(name: str) -> _Queue:
    with _QUEUES_LOCK:
        return _QUEUES.setdefault(name, _Queue())


class TemplateEntry(EntryPoint):
    """Messages in a queue of this process, named ``queue``: sender and hosts in one process.

    A receive leases the oldest message of each thread (none of a thread while one of it is
    leased); :meth:`ack` removes it, :meth:`fail` hands it out again after ``retry_delay``
    seconds or dead-letters it, and a lease that runs out hands it out again. Every hand-out
    counts an attempt; after ``max_attempts`` the message is dead-lettered and kept.

    Args:
        queue: The queue's name; entry points of one name in one process share it.
        visibility_timeout: Seconds a received message stays leased.
        max_attempts: Deliveries before a message is dead-lettered.
        retry_delay: Seconds before a failed message is handed out again.

    Raises:
        ConfigError: An option is invalid (the message names it and its value).
    """

    name = "template"
    options_model = TemplateEntryOptions

    def __init__(
        self,
        queue: str,
        visibility_timeout: float = 300.0,
        max_attempts: int = 5,
        retry_delay: float = 1.0,
    ) -> None:
        options = TemplateEntryOptions.parse(
            self.name,
            {
                "queue": queue,
                "visibility_timeout": visibility_timeout,
                "max_attempts": max_attempts,
                "retry_delay": retry_delay,
            },
        )
        self.queue = options.queue
        self.visibility_timeout = options.visibility_timeout
        self.max_attempts = options.max_attempts
        self.retry_delay = options.retry_delay
        self._queue = _queue(options.queue)

    def send(self, message: Mapping[str, Any]) -> None:
        """Check the message, then put it on the queue."""
        parse_message(message)
        body = json.dumps(dict(message), ensure_ascii=False, separators=(",", ":"))
        self.put(check_body_size(body).encode("utf-8"), message["thread_id"])

    def put(self, body: bytes, thread_id: str) -> None:
        """Put ``body`` on the queue as is, unchecked, as another program could send it."""
        with self._queue.changed:
            message_id = next(self._queue.ids)
            self._queue.messages[message_id] = _Message(message_id, thread_id, body)
            self._queue.changed.notify_all()

    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Lease up to ``max_messages`` thread heads, waiting up to ``wait`` seconds for one."""
        if isinstance(max_messages, bool) or not isinstance(max_messages, int) or max_messages < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ValueError(
                f"max_messages: expected a positive whole number, got {max_messages!r}"
            )
        deadline = time.monotonic() + max(wait, 0.0)
        with self._queue.changed:
            while True:
                now = time.monotonic()
                claimed = self._claim(max_messages, now)
                if claimed or now >= deadline:
                    return claimed
                # Woken by a send or a settle; else when the next lease or delay runs out.
                later = [m.visible_at for m in self._heads() if m.visible_at > now]
                self._queue.changed.wait(min([deadline, *later]) - now)

    def _heads(self) -> list[_Message]:
        """The oldest live message of each thread, in send order."""
        seen: set[str] = set()
        heads: list[_Message] = []
        for message in self._queue.messages.values():
            if message.dead_at is None and message.thread_id not in seen:
                seen.add(message.thread_id)
                heads.append(message)
        return heads

    def _claim(self, limit: int, now: float) -> list[Received]:
        claimed: list[Received] = []
        buried = True
        while buried and len(claimed) < limit:
            buried = False  # a head dead-lettered below lets its thread's next one go out
            for message in self._heads():
                if len(claimed) >= limit:
                    break
                if message.visible_at > now:
                    continue
                if message.attempts >= self.max_attempts:
                    # Its last lease ran out: the receiver died or was too slow every time.
                    self._bury(
                        message,
                        message.error
                        or f"never acknowledged in {message.attempts} deliveries (the host "
                        f"crashed or took longer than visibility_timeout="
                        f"{self.visibility_timeout}s)",
                    )
                    buried = True
                    continue
                message.attempts += 1
                read = read_message(message.body)
                if isinstance(read, Poison):
                    self._bury(message, read.error)
                    buried = True
                    continue
                message.receipt = uuid.uuid4().hex
                message.visible_at = now + self.visibility_timeout
                claimed.append(
                    Received(
                        str(message.id), message.thread_id, read, message.attempts, message.receipt
                    )
                )
        return claimed

    def _bury(self, message: _Message, error: str) -> None:
        message.dead_at = format_utc(datetime.now(UTC))
        message.error = error
        message.receipt = None
        # Only the error's type: its message may quote the message's content.
        logger.error(
            "message %s of thread %s dead-lettered after %d attempts (%s); kept in queue %s",
            message.id,
            log_safe(message.thread_id),
            message.attempts,
            error.partition(":")[0],
            self.queue,
        )

    def _leased(self, received: Received) -> _Message | None:
        """The received message while its lease is this receiver's, else None (logged)."""
        message = self._queue.messages.get(int(received.id))
        if message is not None and message.dead_at is None and message.receipt == received.receipt:
            return message
        logger.warning(
            "message %s of thread %s: its lease ran out before it was settled (handed out again)",
            received.id,
            log_safe(received.thread_id),
        )
        return None

    def ack(self, received: Received) -> bool:
        """Remove the message; False if its lease had run out."""
        with self._queue.changed:
            message = self._leased(received)
            if message is None:
                return False
            del self._queue.messages[message.id]
            self._queue.changed.notify_all()
            return True

    def extend(self, received: Received) -> bool:
        """Lease the message for another ``visibility_timeout`` seconds."""
        with self._queue.changed:
            message = self._leased(received)
            if message is not None:
                message.visible_at = time.monotonic() + self.visibility_timeout
            return message is not None

    def release(self, received: Received) -> bool:
        """Visible again at once, its attempt kept; False if its lease had run out."""
        return self._hand_back(received, 0.0, None) is not None

    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """Hand the message out again after ``retry_delay``, or dead-letter it."""
        if retry and received.attempt < self.max_attempts:
            self._hand_back(received, self.retry_delay, error)
            return False
        with self._queue.changed:
            message = self._leased(received)
            if message is not None:
                self._bury(message, error)
                self._queue.changed.notify_all()
            return message is not None

    def _hand_back(self, received: Received, delay: float, error: str | None) -> _Message | None:
        with self._queue.changed:
            message = self._leased(received)
            if message is not None:
                message.visible_at = time.monotonic() + delay
                message.receipt = None
                message.error = error or message.error
                self._queue.changed.notify_all()
            return message

    def oldest_waiting(self) -> float | None:
        """Seconds since the oldest message not yet acknowledged or dead-lettered was sent."""
        with self._queue.changed:
            sent = [m.sent for m in self._queue.messages.values() if m.dead_at is None]
        return time.monotonic() - min(sent) if sent else None

    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first."""
        with self._queue.changed:
            return [
                dead_letter(str(m.id), m.thread_id, m.body, m.attempts, m.error or "", m.dead_at)
                for m in self._queue.messages.values()
                if m.dead_at is not None
            ]

    def redrive(self, message_id: str) -> bool:
        """Make a dead letter a new message again (attempts reset, its thread's order kept)."""
        with self._queue.changed:
            message = self._queue.messages.get(int(message_id)) if message_id.isdigit() else None
            if message is None or message.dead_at is None:
                return False
            message.dead_at = message.error = message.receipt = None
            message.attempts = 0
            message.visible_at = 0.0
            self._queue.changed.notify_all()
            return True

    def describe(self) -> dict[str, Any]:
        """``queue``: a consumer in this process sends here."""
        return {"queue": self.queue}
