"""The inbox web app: its route modules assembled, behind the session and security layers."""

from __future__ import annotations

from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware

from agent_wait.core import EntryPoint, QuestionStore
from agent_wait.host import ApproverConfig, default_store, load_approver_config
from agent_wait.inbox import _api, _lists, _live, _login, _mounts, _question, _static, _thread
from agent_wait.inbox._auth import InboxAuth
from agent_wait.inbox._web import SESSION_AGE, Limits, Web


def inbox_app(
    store: QuestionStore | None = None,
    auth: InboxAuth | None = None,
    *,
    entry: EntryPoint | None = None,
    poll_interval: float = 1.0,
    approvers: ApproverConfig | None = None,
) -> Starlette:
    """The inbox web app, an ASGI application to serve with uvicorn or mount in another app.

    Args:
        store: The question store (default: the inbox of the configured sqlite announcer).
        auth: Who may answer (default: :class:`InboxAuth` from the environment, which needs
            ``AGENT_WAIT_INBOX_TOKEN``).
        entry: Where answers are sent (default: where each question's ``reply_to`` names,
            else the configured entry point, as :func:`agent_wait.host.answer` chooses).
        poll_interval: Seconds between checks of the store for live updates.
        approvers: Approver groups and admins (default: the configuration's ``[approvers]``
            table). Each person is listed only the questions they may answer; admins see all.
    """
    store = store if store is not None else default_store()
    auth = auth if auth is not None else InboxAuth()
    approvers = approvers if approvers is not None else load_approver_config()
    web = Web(store, auth, entry, poll_interval, approvers)
    routes = [
        *_lists.routes(web),
        *_login.routes(web),
        *_question.routes(web),
        *_thread.routes(web),
        *_live.routes(web),
        *_api.routes(web),
        *_static.routes(),
        *_mounts.routes(web),
    ]
    return Starlette(
        routes=routes,
        middleware=[
            Middleware(Limits),
            Middleware(
                SessionMiddleware,
                secret_key=auth.session_secret,
                session_cookie="agent_wait_inbox",
                # The provider's redirect back is a cross-site navigation: a strict cookie would
                # not come with it, losing the sign-in's state. Every POST still needs CSRF.
                same_site="lax" if auth.oidc is not None else "strict",
                https_only=auth.secure_cookie,
                max_age=SESSION_AGE,
            ),
        ],
    )
