"""Amazon SNS announcer for agent-wait: one message per question, tags as message attributes.

Use it directly::

    from agent_wait.sns import SnsAnnounce

    announce = SnsAnnounce("arn:aws:sns:eu-west-1:123456789012:approvals")
    report = publish(questions, thread_id="order-4471", announce=announce)

or by name from configuration (``agent-wait.toml``)::

    [[announce]]
    use = "sns"
    topic_arn = "arn:aws:sns:eu-west-1:123456789012:approvals"

Options, message shape, limits and IAM permissions: docs/announcers/sns.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports

if TYPE_CHECKING:
    from agent_wait.sns._announcer import SnsAnnounce
    from agent_wait.sns._options import SnsOptions

__all__ = ["SnsAnnounce", "SnsOptions"]

# Lazy, so importing the package (the entry point does) never imports boto3.
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "SnsOptions": "._options",
        "SnsAnnounce": "._announcer",
    },
)
