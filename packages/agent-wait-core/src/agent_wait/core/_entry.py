"""Entry points: where a host receives start and answer messages, and where answers are sent.

One object holds both sides. The consumer side is :meth:`EntryPoint.send`. The host side
receives messages with a lease (:meth:`EntryPoint.receive`) and settles each one explicitly:
:meth:`EntryPoint.ack` once the host handled it, :meth:`EntryPoint.fail` when it could not. A
message that is never settled (the host crashed) comes back when its lease runs out. A message
that failed ``max_attempts`` times is moved to the dead letters, logged and kept, never dropped.

Messages of one thread are handed out in the order they were sent, and none while an earlier
one of its thread is leased: the next ones only after it was acknowledged or dead-lettered. One
receive may hand out several messages of one thread (an SQS FIFO batch does); the receiver then
handles them one after another, in that order, as :func:`agent_wait.host.serve_entry` does.

A body no host can ever handle (a *poison* message: not UTF-8, not JSON, not a JSON object, not
a start message or an answer, or larger than :data:`MAX_MESSAGE_BYTES`) is never handed out:
the entry point reads each body with :func:`read_message` and dead-letters the poison at once,
with the reason, while the rest of the batch and every other thread go on.
"""

from __future__ import annotations

import asyncio
import json
import logging
import unicodedata
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, cast

from pydantic import ValidationError

from agent_wait.core._closing import Closing
from agent_wait.core._errors import ConfigError
from agent_wait.core._models import Answer, StartMessage, is_answer, parse_message
from agent_wait.core._reply_to import check_reply_to

if TYPE_CHECKING:
    from agent_wait.core._options import EntryOptions

logger = logging.getLogger("agent_wait.core.entry")

MAX_MESSAGE_BYTES = 1024 * 1024
"""Bytes: the largest body an entry point reads (1 MiB: SQS's, NATS's default and the webhook's
cap); a larger one is poison."""

_Body = TypeVar("_Body", str, bytes)

SHOWN_BODY_LENGTH = 4096
"""Characters of a poison message's body kept for display in its dead letter."""


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
        body: For a body that is not a JSON object (or is too large to read): the body as
            text, shown safely (undecodable bytes and control characters escaped, at most
            :data:`SHOWN_BODY_LENGTH` characters); ``message`` is then empty. None otherwise.
    """

    id: str
    thread_id: str
    message: dict[str, Any]
    attempts: int
    error: str
    dead_at: str
    body: str | None = None


@dataclass(frozen=True, slots=True)
class Poison:
    """A body no host can handle: dead-letter it at once with :attr:`error`, never hand it out.

    Attributes:
        error: The dead letter's error: ``"PoisonMessage: <reason>"``.
        thread_id: The body's own ``thread_id`` when it has a text one, else empty (an entry
            point that carries the thread beside the body uses its own).
    """

    error: str
    thread_id: str = ""


def _as_bytes(body: bytes | bytearray | memoryview | str) -> bytes:
    if isinstance(body, str):
        try:
            # Text decoded with surrogateescape (a client reading bytes that are not UTF-8)
            # turns back into those bytes.
            return body.encode("utf-8", "surrogateescape")
        except UnicodeEncodeError:
            # Any other lone surrogate: kept as bytes that are not UTF-8, read as such.
            return body.encode("utf-8", "surrogatepass")
    return bytes(body)


def _escape(text: str) -> str:
    # Control and format characters (ANSI escapes, NUL, bidi overrides) never reach a terminal.
    return "".join(
        ch.encode("unicode_escape").decode("ascii") if unicodedata.category(ch)[0] == "C" else ch
        for ch in text
    )


def _show_body(body: bytes | bytearray | memoryview | str) -> str:
    """A body as safe text, cut at :data:`SHOWN_BODY_LENGTH` characters.

    Bytes that are not UTF-8 and control characters are escaped; a cut body ends with how many
    bytes there were.
    """
    raw = _as_bytes(body)
    head = raw[: SHOWN_BODY_LENGTH * 4].decode("utf-8", "backslashreplace")
    shown = _escape(head)
    if len(shown) > SHOWN_BODY_LENGTH or len(raw) > SHOWN_BODY_LENGTH * 4:
        return f"{shown[:SHOWN_BODY_LENGTH]}... ({len(raw)} bytes)"
    return shown


def _json_object(raw: bytes) -> dict[str, Any] | str:
    """The body's JSON object, or why it is not one."""
    if len(raw) > MAX_MESSAGE_BYTES:
        return f"larger than {MAX_MESSAGE_BYTES} bytes ({len(raw)} bytes)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        return f"not UTF-8 text (byte {raw[error.start]:#04x} at offset {error.start})"
    try:
        data: object = json.loads(text)
    except (ValueError, RecursionError) as error:
        return f"not JSON ({type(error).__name__}: {str(error)[:200]})"
    if not isinstance(data, dict):
        return f"JSON {type(data).__name__}, not an object"
    return cast("dict[str, Any]", data)


def read_message(body: bytes | bytearray | memoryview | str) -> dict[str, Any] | Poison:
    """Read a received body: the message, or why it is poison (never raises).

    Entry points call it on every body they receive and dead-letter a :class:`Poison` at once
    (one attempt, its ``error`` as the reason) instead of handing it out.
    """
    read = _json_object(_as_bytes(body))
    if isinstance(read, str):
        return Poison(f"PoisonMessage: {read}")
    thread = read.get("thread_id")
    try:
        # Quietly: the host's own parse reports a start message that looks like an answer.
        (Answer if is_answer(read) else StartMessage).model_validate(read)
    except ValidationError as error:
        return Poison(
            f"PoisonMessage: not a start message or an answer: {error}",
            thread if isinstance(thread, str) else "",
        )
    return read


def check_body_size(body: _Body) -> _Body:
    """Refuse to send a body larger than :data:`MAX_MESSAGE_BYTES`; return it unchanged.

    Every receiver would dead-letter it as poison.

    Raises:
        ValueError: It is larger; the message says by how much.
    """
    size = len(body.encode("utf-8")) if isinstance(body, str) else len(body)
    if size > MAX_MESSAGE_BYTES:
        raise ValueError(
            f"message: {size} bytes of JSON, more than the {MAX_MESSAGE_BYTES} an entry point "
            "reads; send large content by reference (a URL, a key) instead"
        )
    return body


def dead_letter(
    id: str,
    thread_id: str,
    body: bytes | bytearray | memoryview | str,
    attempts: int,
    error: str,
    dead_at: str,
) -> DeadLetter:
    """A :class:`DeadLetter` from a stored body, readable or not (never raises on the body)."""
    read = _json_object(_as_bytes(body))
    if isinstance(read, str):
        return DeadLetter(id, thread_id, {}, attempts, error, dead_at, _show_body(body))
    return DeadLetter(id, thread_id, read, attempts, error, dead_at)


def check_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """Validate a start message or answer before it is sent; return it as a plain dict.

    Raises:
        pydantic.ValidationError: The message is neither (the error names the field).
    """
    parse_message(message)
    return dict(message)


@contextmanager
def connection_errors(kinds: tuple[type[BaseException], ...], where: str) -> Generator[None]:
    """Raise an SDK's connection errors (``kinds``) as ``ConnectionError`` naming ``where``.

    What every entry point's host side raises when its transport cannot be reached, so that the
    worker retries it with backoff without knowing any SDK. ``where`` names the server, never a
    credential; the SDK's error is the ``__cause__``.
    """
    try:
        yield
    except kinds as error:
        raise ConnectionError(f"{where}: {type(error).__name__}: {error}") from error


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

        Like every call of the host side (``ack``, ``fail``, ``extend``, ``release``), it
        raises ``ConnectionError`` (or ``TimeoutError``) when the transport cannot be reached or
        did not answer, whatever its SDK raises, so that the worker retries it with backoff;
        the next call reconnects.

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

    def oldest_waiting(self) -> float | None:
        """Seconds since the oldest message neither acknowledged nor dead-lettered was sent.

        For an operator's lag figure (the OpenTelemetry plugin reads it when metrics are
        collected). Default: None, the transport cannot tell.
        """
        return None

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
