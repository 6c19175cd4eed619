"""Email announcer for agent-wait: ``EmailAnnounce``, configurable as ``use = "email"``.

Each question goes to its recipients as a text + HTML message with one link per allowed
action. A link opens a confirmation page served by :func:`links_app` (``agent-wait email
serve``); only that page's POST answers, so a mail scanner fetching every link answers nothing.

The entry point names ``agent_wait.email._plugin``; Python imports this package first, so
nothing here imports aiosmtplib or starlette eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agent_wait.core import lazy_exports
from agent_wait.email._errors import TokenRefused
from agent_wait.email._options import EmailOptions
from agent_wait.email._tokens import LinkSigner, LinkToken

if TYPE_CHECKING:
    from agent_wait.email._announcer import EmailAnnounce
    from agent_wait.email._links import links_app

__all__ = ["EmailAnnounce", "EmailOptions", "LinkSigner", "LinkToken", "TokenRefused", "links_app"]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "EmailAnnounce": "._announcer",
        "links_app": "._links",
    },
)
