"""Entry points: where a host receives start and answer messages, and where answers are sent.

One object holds both sides. The consumer side is :meth:`EntryPoint.send`. The host side
receives messages with a lease (:meth:`EntryPoint.receive`) and settles each one explicitly:
:meth:`EntryPoint.ack` once the host handled it, :meth:`EntryPoint.fail` when it could not. A
message that is never settled (the host crashed) comes back when its lease runs out. A message
that failed ``max_attempts`` times is moved to the dead letters, logged and kept, never dropped.

Messages of one thread are handed out in the order they were sent, and none while an earlier
one of its thread is leased: the next ones only after it was acknowledged or dead-lettered. One
receive may hand out several messages of one thread (an SQS FIFO batch does); the receiver then
handles them one after another, in that order, as :func:`agent_wait.core.serve_entry` does.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from agent_wait.core._closing import Closing
from agent_wait.core._errors import ConfigError
from agent_wait.core._models import parse_message
from agent_wait.core._reply_to import check_reply_to

if TYPE_CHECKING:
    from agent_wait.core._options import EntryOptions

logger = logging.getLogger("agent_wait.core.entry")


@dataclass(frozen=True, slots=True)
class Received:
    """One message handed to a host, leased until it is settled or its lease runs out.

    Attributes:
        id: The message's id in the entry point.
        thread_id: The thread it belongs to.
        message: The message as sent (a start message or an answer).
        attempt: 1 on the first delivery, one more on each redelivery.
        receipt: The lease handle; settling with a lease that ran out (and was given to
            another receiver) does nothing.
    """

    id: str
    thread_id: str
    message: dict[str, Any]
    attempt: int
    receipt: str


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message that failed for good: kept with why, for someone to look at or redrive.

    Attributes:
        id: The message's id.
        thread_id: Its thread.
        message: The message as sent.
        attempts: How many times it was handed out.
        error: The last failure (exception type and message, or the lease running out).
        dead_at: When it was dead-lettered (RFC 3339 UTC).
    """

    id: str
    thread_id: str
    message: dict[str, Any]
    attempts: int
    error: str
    dead_at: str


def check_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a start message or answer before it is sent; return it as a plain dict.

    Raises:
        pydantic.ValidationError: The message is neither (the error names the field).
    """
    parse_message(message)
    return dict(message)


class EntryPoint(Closing, ABC):
    """Base class of entry points. Subclasses implement the abstract methods.

    Attributes:
        name: The registered name (set from configuration).
        max_attempts: Deliveries before a message is dead-lettered.
        visibility_timeout: Seconds a received message stays leased to its receiver.
        receive_batch: How many messages one receive request can bring at no extra cost (1:
            a request per message, or receiving is cheap). The worker asks for at least this
            many and holds what it cannot start yet, renewing their leases.
        options_model: The entry point's options (a subclass of
            :class:`agent_wait.core.EntryOptions`): ``entry(name, **options)`` and the
            ``[entry]`` table are checked against it before the constructor is called, and
            ``agent-wait plugins --json`` prints its JSON Schema. Required for an entry point
            built by name.
    """

    name: str = "EntryPoint"
    options_model: ClassVar[type[EntryOptions] | None] = None
    max_attempts: int = 5
    visibility_timeout: float = 300.0
    receive_batch: int = 1

    @abstractmethod
    def send(self, message: Mapping[str, Any]) -> None:
        """Send a start message or an answer (validated first).

        Raises:
            pydantic.ValidationError: The message is malformed; nothing was sent.
        """

    async def asend(self, message: Mapping[str, Any]) -> None:
        """Async :meth:`send` (default: :meth:`send` in a worker thread)."""
        await asyncio.to_thread(self.send, message)

    @abstractmethod
    def receive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Lease up to ``max_messages`` messages, waiting up to ``wait`` seconds for one.

        A thread's messages in send order, and none while an earlier one of the thread is
        leased. Several messages of one thread may come in one call: handle them one after
        another, in the order of the list, and give back the rest (:meth:`release`) when one
        of them is not acknowledged.
        """

    async def areceive(self, max_messages: int = 1, wait: float = 0.0) -> list[Received]:
        """Async :meth:`receive` (default: :meth:`receive` in a worker thread)."""
        return await asyncio.to_thread(self.receive, max_messages, wait)

    @abstractmethod
    def ack(self, received: Received) -> bool:
        """The host handled the message: remove it. False if the lease had run out."""

    @abstractmethod
    def fail(self, received: Received, error: str, *, retry: bool = True) -> bool:
        """The host could not handle the message.

        With ``retry`` and attempts left, the message is handed out again after a delay;
        otherwise it is dead-lettered (logged at ERROR). Returns True if it was dead-lettered.
        """

    @abstractmethod
    def extend(self, received: Received) -> bool:
        """Renew the lease for another ``visibility_timeout``; False if it had run out."""

    def release(self, received: Received) -> bool:
        """Give a message back unhandled, to be handed out again at once; False if its lease ran out.

        The delivery still counts as an attempt (SQS counts every receive). Default: nothing is
        done (False), so the message comes back when its lease runs out.
        """
        return False

    @abstractmethod
    def dead_letters(self) -> list[DeadLetter]:
        """Every dead-lettered message, oldest first."""

    @abstractmethod
    def redrive(self, message_id: str) -> bool:
        """Put a dead-lettered message back, as if new; False if there is no such dead letter."""

    def describe(self) -> dict[str, Any]:
        """The options a consumer needs to send here, never a secret (see :meth:`reply_to`).

        Raises:
            ConfigError: This kind of entry point has no public description (the default).
        """
        raise ConfigError(
            f"entry point {self.name!r} has no public description to publish as reply_to"
        )

    def reply_to(self) -> dict[str, Any]:
        """``{"use": name, **describe()}``: what a host publishes as every envelope's ``reply_to``.

        Raises:
            ConfigError: It would publish a secret (a credential in a URL, a token...); the
                message names the option.
        """
        return check_reply_to(
            {"use": self.name, **self.describe()}, f"reply_to of entry point {self.name!r}"
        )

    def close(self) -> None:
        """Release connections. Safe to call more than once."""

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"
