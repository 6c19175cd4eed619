"""The options of the ``redis`` announcer and entry point (importing it imports no Redis client)."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator

from agent_wait.core import AnnouncerOptions, EntryOptions
from agent_wait.core.options import (
    Flag,
    PositiveCount,
    Seconds,
    SecondsOrZero,
    SensitiveUrl,
    Text,
)

DEFAULT_URL = "redis://localhost:6379/0"
DEFAULT_STREAM = "agent-wait:questions"
DEFAULT_INDEX_PREFIX = "agent-wait:question:"
DEFAULT_MESSAGES_STREAM = "agent-wait:messages"
DEFAULT_GROUP = "agent-wait-hosts"
SCHEMES = ("redis://", "rediss://", "unix://")


def _scheme(value: str) -> str:
    if not value.startswith(SCHEMES):
        raise ValueError(f"expected a {'/'.join(SCHEMES)} URL")
    return value


RedisUrl = Annotated[SensitiveUrl, AfterValidator(_scheme)]


class RedisOptions(AnnouncerOptions):
    """Options of the ``redis`` announcer (see ``RedisAnnounce``)."""

    url: RedisUrl = DEFAULT_URL
    """``redis://``, ``rediss://`` or ``unix://`` URL (may carry credentials and the db)."""
    stream: Text = DEFAULT_STREAM
    """The stream key."""
    maxlen: PositiveCount | None = None
    """Trim the stream to about this many entries on every add (``MAXLEN ~``); null keeps all."""
    index: Flag = False
    """Write a per-question hash and skip republishes of questions it already holds."""
    index_prefix: Text = DEFAULT_INDEX_PREFIX
    """Key prefix of the per-question hashes."""
    index_ttl: Seconds | None = None
    """Seconds the hash lives; null keeps it until a consumer deletes it."""
    timeout: Seconds = 5.0
    """Seconds to wait to connect and for each reply."""


class RedisEntryOptions(EntryOptions):
    """Options of the ``redis`` entry point (see ``RedisEntry``)."""

    url: RedisUrl = DEFAULT_URL
    """``redis://``, ``rediss://`` or ``unix://`` URL (may carry credentials and the db)."""
    stream: Text = DEFAULT_MESSAGES_STREAM
    """The stream key; the other keys are named after it."""
    group: Text = DEFAULT_GROUP
    """The consumer group every host reads with."""
    consumer: Text | None = None
    """This host's consumer name; null: host name, process id and a random part."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again (doubled per attempt)."""
    poll_interval: Seconds = 1.0
    """Seconds a waiting receiver blocks before looking for lapsed leases."""
    timeout: Seconds = 5.0
    """Seconds to wait to connect and for each reply."""
