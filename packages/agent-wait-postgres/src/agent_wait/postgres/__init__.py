"""PostgreSQL announcer for agent-wait: one row per open question, plus a NOTIFY.

Publish::

    from agent_wait.core import announcer, publish

    announce = announcer("postgres", url="postgresql://app@localhost/app", create_table=True)
    report = publish(questions, thread_id="order-4471", announce=announce)

Consume::

    import psycopg
    from agent_wait.postgres import open_questions_past

    with psycopg.connect("postgresql://app@localhost/app") as conn:
        for envelope in open_questions_past(conn):
            send_to(entry_point, {**envelope["reply_with"], "answer": envelope["default"]})

Or configure it by name in ``agent-wait.toml``::

    [[announce]]
    use = "postgres"
    url = "postgresql://app@localhost/app"
    channel = "agent_wait_inbox"

The table, the NOTIFY payload and the dedupe behaviour are described on
:class:`PostgresAnnounce` and in docs/announcers/postgres.md.

:class:`PostgresEntry` is the ``postgres`` entry point (``entry("postgres", url=...)``): a
message table hosts lease with ``FOR UPDATE SKIP LOCKED``, described in docs/entry-points.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_wait.postgres._options import PostgresOptions

if TYPE_CHECKING:
    from agent_wait.postgres._announcer import PostgresAnnounce
    from agent_wait.postgres._entry import PostgresEntry
    from agent_wait.postgres._schema import (
        acreate_schema,
        aopen_questions_past,
        create_schema,
        open_questions_past,
    )
    from agent_wait.postgres._store import PostgresQuestionStore

__all__ = [
    "PostgresAnnounce",
    "PostgresEntry",
    "PostgresOptions",
    "PostgresQuestionStore",
    "acreate_schema",
    "aopen_questions_past",
    "create_schema",
    "open_questions_past",
]

_SCHEMA = frozenset(
    {"acreate_schema", "aopen_questions_past", "create_schema", "open_questions_past"}
)


def __getattr__(name: str) -> Any:
    # Lazy, so importing the package (the entry point does) never imports psycopg.
    if name == "PostgresAnnounce":
        from agent_wait.postgres._announcer import PostgresAnnounce

        return PostgresAnnounce
    if name == "PostgresEntry":
        from agent_wait.postgres._entry import PostgresEntry

        return PostgresEntry
    if name == "PostgresQuestionStore":
        from agent_wait.postgres._store import PostgresQuestionStore

        return PostgresQuestionStore
    if name in _SCHEMA:
        from agent_wait.postgres import _schema

        return getattr(_schema, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
