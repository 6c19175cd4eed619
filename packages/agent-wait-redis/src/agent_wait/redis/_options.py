"""The options of the ``redis`` announcer (importing it imports no Redis client)."""

from __future__ import annotations

from pydantic import field_validator

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Flag, PositiveCount, Seconds, SensitiveUrl, Text

DEFAULT_URL = "redis://localhost:6379/0"
DEFAULT_STREAM = "agent-wait:questions"
DEFAULT_INDEX_PREFIX = "agent-wait:question:"
SCHEMES = ("redis://", "rediss://", "unix://")


class RedisOptions(AnnouncerOptions):
    """Options of the ``redis`` announcer (see ``RedisAnnounce``)."""

    url: SensitiveUrl = DEFAULT_URL
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

    @field_validator("url")
    @classmethod
    def _scheme(cls, value: str) -> str:
        if not value.startswith(SCHEMES):
            raise ValueError(f"expected a {'/'.join(SCHEMES)} URL")
        return value
