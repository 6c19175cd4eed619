"""Amazon SQS announcer for agent-wait: one message per question.

Use it directly::

    from agent_wait.sqs import SqsAnnounce

    announce = SqsAnnounce("https://sqs.eu-west-1.amazonaws.com/123456789012/approvals.fifo")
    report = publish(questions, thread_id="order-4471", announce=announce)

or by name from configuration (``agent-wait.toml``)::

    [[announce]]
    use = "sqs"
    queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/approvals.fifo"

Options, message shape, limits and IAM permissions: docs/announcers/sqs.md.

A Lambda function behind an SQS event source mapping hands each record to the framework::

    handler = lambda_handler(lambda m: handle_message(graph, m, announce, strict=True))

It returns the partial batch response (``batchItemFailures``): see docs/deployment.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.sqs._announcer import SqsAnnounce
    from agent_wait.sqs._entry import SqsEntry
    from agent_wait.sqs._lambda import LambdaHandler, lambda_handler
    from agent_wait.sqs._options import SqsEntryOptions, SqsOptions

__all__ = [
    "LambdaHandler",
    "SqsAnnounce",
    "SqsEntry",
    "SqsEntryOptions",
    "SqsOptions",
    "lambda_handler",
]

# Lazy, so importing the package (the entry point does) never imports boto3, and a Lambda
# handler (which needs no SDK) never loads it either.
_HOMES = {
    "SqsEntryOptions": "._options",
    "SqsOptions": "._options",
    "LambdaHandler": "._lambda",
    "SqsAnnounce": "._announcer",
    "SqsEntry": "._entry",
    "lambda_handler": "._lambda",
}

__getattr__, __dir__ = lazy_exports(__name__, _HOMES)
