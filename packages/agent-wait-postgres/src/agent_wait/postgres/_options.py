"""The options of the ``postgres`` announcer and entry point (importing it imports no psycopg)."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator

from agent_wait.core import AnnouncerOptions, EntryOptions
from agent_wait.core.options import Flag, PositiveCount, Seconds, SecondsOrZero, SensitiveUrl

DEFAULT_TABLE = "agent_wait_inbox"
DEFAULT_CHANNEL = "agent_wait_inbox"
DEFAULT_MESSAGES_TABLE = "agent_wait_messages"
DEFAULT_MESSAGES_CHANNEL = "agent_wait_messages"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_IDENTIFIER = 63  # bytes; PostgreSQL truncates longer names (NAMEDATALEN - 1)


def plain_identifier(name: str) -> bool:
    """True for a name usable unquoted-alike: letters, digits, ``_``, at most 63 bytes."""
    return bool(_IDENTIFIER.match(name)) and len(name.encode("utf-8")) <= MAX_IDENTIFIER


def table_parts(table: str) -> list[str] | None:
    """``name`` or ``schema.name`` split in parts, or None when a part is not plain."""
    parts = table.split(".")
    return parts if 1 <= len(parts) <= 2 and all(plain_identifier(p) for p in parts) else None


def _table(value: str) -> str:
    if table_parts(value) is None:
        raise ValueError(
            "expected a plain identifier such as 'agent_wait_inbox' or "
            "'myschema.agent_wait_inbox' (letters, digits, _; at most 63 bytes)"
        )
    return value


def _channel(value: str | None) -> str | None:
    if value is not None and not plain_identifier(value):
        raise ValueError(
            "expected a plain identifier such as 'agent_wait_inbox' (letters, digits, _; at "
            "most 63 bytes) or null"
        )
    return value


Table = Annotated[str, AfterValidator(_table)]
"""``name`` or ``schema.name`` of a table."""
Channel = Annotated[str | None, AfterValidator(_channel)]
"""A NOTIFY channel (a plain identifier) or None."""


class PostgresOptions(AnnouncerOptions):
    """Options of the ``postgres`` announcer (see ``PostgresAnnounce``)."""

    url: SensitiveUrl = ""
    """libpq connection string or URI (``postgresql://user@host:5432/db``); empty uses the
    ``PG*`` environment variables and libpq defaults."""
    table: Table = DEFAULT_TABLE
    """``name`` or ``schema.name``."""
    channel: Channel = DEFAULT_CHANNEL
    """The NOTIFY channel; null sends no notification."""
    create_table: Flag = False
    """Create the table and its index on first connect if missing."""
    timeout: Seconds = 10.0
    """Seconds to wait to connect (libpq rounds up to whole seconds)."""


class PostgresEntryOptions(EntryOptions):
    """Options of the ``postgres`` entry point (see ``PostgresEntry``)."""

    url: SensitiveUrl = ""
    """libpq connection string or URI; empty uses the ``PG*`` environment variables."""
    table: Table = DEFAULT_MESSAGES_TABLE
    """``name`` or ``schema.name`` of the message table (created if missing)."""
    channel: Annotated[str, AfterValidator(_channel)] = DEFAULT_MESSAGES_CHANNEL
    """The NOTIFY channel receivers LISTEN on."""
    visibility_timeout: Seconds = 300.0
    """Seconds a received message stays leased."""
    max_attempts: PositiveCount = 5
    """Deliveries before a message is dead-lettered."""
    retry_delay: SecondsOrZero = 1.0
    """Seconds before a failed message is handed out again (doubled per attempt)."""
    max_retry_delay: SecondsOrZero = 300.0
    """The longest retry delay, in seconds."""
    poll_interval: Seconds = 1.0
    """Seconds between re-checks while a receiver waits without a notification."""
    timeout: Seconds = 10.0
    """Seconds to wait to connect (libpq rounds up to whole seconds)."""
