"""Amazon DynamoDB announcer for agent-wait: one row per open question.

Create the table once, then announce into it::

    import boto3
    from agent_wait.dynamodb import DynamoDbAnnounce, create_table, open_questions_past

    create_table(boto3.client("dynamodb"), "agent-wait-questions", ttl_attribute="ttl")
    announce = DynamoDbAnnounce("agent-wait-questions", ttl_attribute="ttl")
    report = publish(questions, thread_id="order-4471", announce=announce)

A consumer finds the questions whose deadline has passed::

    table = boto3.resource("dynamodb").Table("agent-wait-questions")
    for envelope in open_questions_past(table):
        send_to_agent({**envelope.reply_with.model_dump(), "answer": envelope.default})

or configure the announcer by name (``agent-wait.toml``)::

    [[announce]]
    use = "dynamodb"
    table_name = "agent-wait-questions"

The row, options, limits and IAM permissions: docs/announcers/dynamodb.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.dynamodb._announcer import DynamoDbAnnounce
    from agent_wait.dynamodb._audit import DynamoDbAuditLog
    from agent_wait.dynamodb._ledger import DynamoDbLedger
    from agent_wait.dynamodb._options import DynamoDbOptions
    from agent_wait.dynamodb._store import DynamoDbQuestionStore
    from agent_wait.dynamodb._table import create_table, open_questions_past

__all__ = [
    "DynamoDbAnnounce",
    "DynamoDbAuditLog",
    "DynamoDbLedger",
    "DynamoDbOptions",
    "DynamoDbQuestionStore",
    "create_table",
    "open_questions_past",
]

# Lazy, so importing the package (the entry point does) never imports boto3.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "DynamoDbOptions": "._options",
        "DynamoDbAnnounce": "._announcer",
        "DynamoDbAuditLog": "._audit",
        "DynamoDbLedger": "._ledger",
        "DynamoDbQuestionStore": "._store",
        "create_table": "._table",
        "open_questions_past": "._table",
    },
)
