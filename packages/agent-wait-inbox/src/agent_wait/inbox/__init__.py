"""The approvals web app: list, inspect and answer the questions agent runs wait on.

``inbox_app(store=..., auth=...)`` is an ASGI application (Starlette); ``agent-wait inbox
serve`` runs it on uvicorn over the embedded sqlite inbox.
"""

from __future__ import annotations

from agent_wait.inbox._app import inbox_app
from agent_wait.inbox._auth import IdentityProvider, InboxAuth
from agent_wait.inbox._oidc import OidcSignIn

__all__ = ["IdentityProvider", "InboxAuth", "OidcSignIn", "inbox_app"]
