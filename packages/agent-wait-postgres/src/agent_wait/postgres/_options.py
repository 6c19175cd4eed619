"""The options of the ``postgres`` announcer (importing it imports no psycopg)."""

from __future__ import annotations

import re

from pydantic import field_validator

from agent_wait.core import AnnouncerOptions
from agent_wait.core.options import Flag, Seconds, SensitiveUrl

DEFAULT_TABLE = "agent_wait_inbox"
DEFAULT_CHANNEL = "agent_wait_inbox"
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MAX_IDENTIFIER = 63  # bytes; PostgreSQL truncates longer names (NAMEDATALEN - 1)


def plain_identifier(name: str) -> bool:
    """True for a name usable unquoted-alike: letters, digits, ``_``, at most 63 bytes."""
    return bool(_IDENTIFIER.match(name)) and len(name.encode("utf-8")) <= MAX_IDENTIFIER


def table_parts(table: str) -> list[str] | None:
    """``name`` or ``schema.name`` split in parts, or None when a part is not plain."""
    parts = table.split(".")
    return parts if 1 <= len(parts) <= 2 and all(plain_identifier(p) for p in parts) else None


class PostgresOptions(AnnouncerOptions):
    """Options of the ``postgres`` announcer (see ``PostgresAnnounce``)."""

    url: SensitiveUrl = ""
    """libpq connection string or URI (``postgresql://user@host:5432/db``); empty uses the
    ``PG*`` environment variables and libpq defaults."""
    table: str = DEFAULT_TABLE
    """``name`` or ``schema.name``."""
    channel: str | None = DEFAULT_CHANNEL
    """The NOTIFY channel; null sends no notification."""
    create_table: Flag = False
    """Create the table and its index on first connect if missing."""
    timeout: Seconds = 10.0
    """Seconds to wait to connect (libpq rounds up to whole seconds)."""

    @field_validator("table")
    @classmethod
    def _table(cls, value: str) -> str:
        if table_parts(value) is None:
            raise ValueError(
                "expected a plain identifier such as 'agent_wait_inbox' or "
                "'myschema.agent_wait_inbox' (letters, digits, _; at most 63 bytes)"
            )
        return value

    @field_validator("channel")
    @classmethod
    def _channel(cls, value: str | None) -> str | None:
        if value is not None and not plain_identifier(value):
            raise ValueError(
                "expected a plain identifier such as 'agent_wait_inbox' (letters, digits, _; at "
                "most 63 bytes) or null"
            )
        return value
