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

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.postgres._announcer import PostgresAnnounce
    from agent_wait.postgres._audit import PostgresAuditLog
    from agent_wait.postgres._entry import PostgresEntry
    from agent_wait.postgres._ledger import PostgresLedger
    from agent_wait.postgres._options import PostgresEntryOptions, PostgresOptions
    from agent_wait.postgres._schema import (
        acreate_schema,
        aopen_questions_past,
        create_schema,
        open_questions_past,
    )
    from agent_wait.postgres._store import PostgresQuestionStore

__all__ = [
    "PostgresAnnounce",
    "PostgresAuditLog",
    "PostgresEntry",
    "PostgresEntryOptions",
    "PostgresLedger",
    "PostgresOptions",
    "PostgresQuestionStore",
    "acreate_schema",
    "aopen_questions_past",
    "create_schema",
    "open_questions_past",
]

# Lazy, so importing the package (the entry point does) never imports psycopg.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "PostgresEntryOptions": "._options",
        "PostgresOptions": "._options",
        "PostgresAnnounce": "._announcer",
        "PostgresAuditLog": "._audit",
        "PostgresEntry": "._entry",
        "PostgresLedger": "._ledger",
        "PostgresQuestionStore": "._store",
        "acreate_schema": "._schema",
        "aopen_questions_past": "._schema",
        "create_schema": "._schema",
        "open_questions_past": "._schema",
    },
)
