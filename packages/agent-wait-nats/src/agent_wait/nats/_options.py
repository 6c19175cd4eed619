"""The options of the ``nats`` announcer and entry point (importing it imports no NATS client)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, field_validator, model_validator

from agent_wait.core import AnnouncerOptions, ConfigError, EntryOptions
from agent_wait.core.options import Flag, PositiveCount, Seconds, SecondsOrZero, SensitiveUrl, Text
from agent_wait.nats._subject import OPTION, SubjectTemplate

DEFAULT_URL = "nats://localhost:4222"
DEFAULT_SUBJECT = "agent-wait.questions"
DEFAULT_ENTRY_STREAM = "AGENT_WAIT_ENTRY"
DEFAULT_ENTRY_SUBJECT = "agent-wait.entry"
DEFAULT_DURABLE = "agent-wait"
SCHEMES = ("nats://", "tls://", "ws://", "wss://")
_STREAM_NAME = re.compile(r"^[^\s.*>/\\\x00-\x1f\x7f]+$")


def servers(url: str | list[str]) -> tuple[str, ...]:
    """The server URLs of the ``url`` option (comma-separated text or a list)."""
    items = url.split(",") if isinstance(url, str) else url
    return tuple(item.strip() for item in items)


def _check_servers(url: str | list[str]) -> str | list[str]:
    found = servers(url)
    if not found or not all(server.startswith(SCHEMES) for server in found):
        raise ValueError(f"expected {'/'.join(SCHEMES)} URLs (comma-separated or a list)")
    return url


def _stream_name(value: str | None) -> str | None:
    if value is not None and not _STREAM_NAME.match(value):
        raise ValueError("expected a stream name without whitespace, '.', '*', '>' or slashes")
    return value


NatsUrl = Annotated[SensitiveUrl | list[SensitiveUrl], AfterValidator(_check_servers)]
"""Server URL(s): comma-separated text or a list."""
_NAME = re.compile(r"^[A-Za-z0-9_-]+$")
_SUBJECT = re.compile(r"^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$")


def _name(value: str) -> str:
    if not _NAME.match(value):
        raise ValueError("expected letters, digits, '_' or '-'")
    return value


def _entry_subject(value: str) -> str:
    if not _SUBJECT.match(value):
        raise ValueError(
            "expected dot-separated tokens of letters, digits, '_' or '-' (no wildcards)"
        )
    return value


class NatsOptions(AnnouncerOptions):
    """Options of the ``nats`` announcer (see ``NatsAnnounce``)."""

    url: NatsUrl = DEFAULT_URL
    """Server URL ``nats://host:4222`` (several comma-separated, or a list); may carry
    ``user:password@`` or a ``token@``."""
    subject: Text = DEFAULT_SUBJECT
    """Subject template, e.g. ``agent-wait.questions.{tags[approver_group]}``."""
    stream: Annotated[str | None, AfterValidator(_stream_name)] = None
    """The stream expected to store the messages; needed for ``create_stream``."""
    create_stream: Flag = False
    """Create ``stream`` when it does not exist yet."""
    duplicate_window: Seconds = 120.0
    """Seconds of the duplicate window of a stream created here."""
    timeout: Seconds = 5.0
    """Seconds to wait to connect and for each publish ack."""

    @field_validator("subject")
    @classmethod
    def _subject(cls, value: str) -> str:
        try:
            SubjectTemplate(value)
        except ConfigError as error:
            raise ValueError(str(error).removeprefix(f"{OPTION}: ")) from None
        return value

    @model_validator(mode="after")
    def _stream_to_create(self) -> NatsOptions:
        if self.create_stream and self.stream is None:
            raise ValueError("option 'create_stream': true needs the stream option")
        return self


class NatsEntryOptions(EntryOptions):
    """Options of the ``nats`` entry point (see ``NatsEntry``)."""

    url: NatsUrl = DEFAULT_URL
    """Server URL(s), as for the ``nats`` announcer; may carry credentials."""
    stream: Annotated[str, AfterValidator(_name)] = DEFAULT_ENTRY_STREAM
    """The work-queue stream (``<stream>_DEAD`` and the ``<stream>_ATTEMPTS`` bucket go with it)."""
    subject: Annotated[str, AfterValidator(_entry_subject)] = DEFAULT_ENTRY_SUBJECT
    """The subject prefix; messages go to ``<subject>.<thread>``."""
    durable: Annotated[str, AfterValidator(_name)] = DEFAULT_DURABLE
    """The durable consumer's name, shared by every host of this entry point."""
    create: Flag = True
    """Create the streams, the bucket and the consumer when missing."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased (the consumer's ``ack_wait``)."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is delivered again (the nak delay)."""
    hold_delay: Seconds = 0.2
    """Seconds before a message held back behind its thread's earlier one is offered again."""
    timeout: Seconds = 5.0
    """Seconds to wait to connect and for each server reply."""
