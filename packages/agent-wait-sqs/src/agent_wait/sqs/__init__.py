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
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_wait.sqs._options import SqsOptions

if TYPE_CHECKING:
    from agent_wait.sqs._announcer import SqsAnnounce

__all__ = ["SqsAnnounce", "SqsOptions"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing the package (the entry point does) never imports boto3.
    if name == "SqsAnnounce":
        from agent_wait.sqs._announcer import SqsAnnounce

        return SqsAnnounce
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
