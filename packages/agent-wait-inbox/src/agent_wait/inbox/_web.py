"""What every page of the inbox shares: who is asking, CSRF, rendering, the login guard.

The route modules (``_login``, ``_lists``, ``_question``, ``_thread``, ``_api``, ``_live``,
``_static``) each take a :class:`Web` and return their routes; ``_app`` assembles them.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from pydantic import ValidationError
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
)
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_wait.core import (
    EntryPoint,
    Identity,
    QuestionStore,
    StoredQuestion,
    brief,
)
from agent_wait.host import ApproverConfig, SendUnconfirmed, answer, answer_many, may_see
from agent_wait.inbox._auth import InboxAuth, is_loopback
from agent_wait.inbox._present import ago, parse_utc
from agent_wait.inbox._query import Listing, Page, function_of

logger = logging.getLogger("agent_wait.inbox")

HERE = Path(__file__).parent
MAX_BODY = 64 * 1024
PAGE_SIZE = 50
SESSION_AGE = 12 * 3600
"""Seconds a session cookie lives after the last response that set it."""
CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-store"),
]

Handler = Callable[[Request], Awaitable[Response]]


class _ThreadId(Convertor[str]):
    """A thread id in a path: any text, "/" and line breaks included.

    Starlette's ``path`` stops at a line break (its ``.*``), and a thread id may hold one.
    """

    regex = r"[\s\S]+"

    def convert(self, value: str) -> str:
        return value

    def to_string(self, value: str) -> str:
        return value


register_url_convertor("thread", _ThreadId())


class Limits:
    """Security headers on every response; request bodies over ``MAX_BODY`` refused with 413."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        length = headers.get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > MAX_BODY):
            await PlainTextResponse("request body too large", 413)(scope, receive, send)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            seen += len(message.get("body", b""))
            if seen > MAX_BODY:
                raise _TooLarge
            return message

        async def secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        try:
            await self.app(scope, limited, secured)
        except _TooLarge:
            await PlainTextResponse("request body too large", 413)(scope, receive, send)


class _TooLarge(Exception):
    pass


class Sessions:
    """Sessions logged out of: refused for as long as a copy of their cookie could be valid.

    The cookie is signed, not stored, so it stays valid until it expires; logging out puts
    its session here instead. Kept in memory, like the default signing key.
    """

    def __init__(self, age: float) -> None:
        # A request in flight at the logout may sign the cookie once more: an hour's margin.
        self._keep = age + 3600
        self._revoked: dict[str, float] = {}
        self._lock = threading.Lock()

    def revoke(self, session: str) -> None:
        now = time.monotonic()
        with self._lock:
            self._revoked = {s: until for s, until in self._revoked.items() if until > now}
            self._revoked[session] = now + self._keep

    def revoked(self, session: str) -> bool:
        with self._lock:
            return session in self._revoked


def when(text: str | None) -> str:
    return text or "no deadline"


def overdue(question: StoredQuestion, now: str) -> bool:
    expires = question.envelope.expires_at
    return question.is_open and expires is not None and expires < now


def now_text() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _compact(value: Any) -> str:
    """JSON text, escaped by the template like any text (never marked safe)."""
    return json.dumps(value, ensure_ascii=False)


def _function_name(envelope: Any) -> str:
    """The asking function's name for a heading, or "" (the template says "question")."""
    return function_of(envelope) or ""


def _short(value: Any) -> str:
    """JSON text cut to one line's worth (the page of the question shows all of it)."""
    text = _compact(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _ago(text: str | None) -> str:
    return ago(parse_utc(text), datetime.now(UTC))


def _templates() -> Environment:
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        # The templates are package files: compiled once, never stat()ed again per request.
        auto_reload=False,
    )
    templates.filters["pretty"] = _pretty
    templates.filters["when"] = when
    templates.filters["compact"] = _compact
    templates.filters["function"] = _function_name
    templates.filters["short"] = _short
    templates.filters["ago"] = _ago
    templates.filters["number"] = brief
    return templates


def root(request: Request) -> str:
    """The path the app is mounted at ("" at the root of its server)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def form_fields(form: Any) -> dict[str, str]:
    """A posted form's text fields (an uploaded file is no answer)."""
    return {k: v for k, v in form.items() if isinstance(v, str)}


def question_json(question: StoredQuestion) -> dict[str, Any]:
    return (
        {
            "status": question.status,
            "answered_at": question.answered_at,
            "answered_by": question.answered_by,
            "answer": question.answer,
            "envelope": question.envelope.to_dict(),
        }
        | (
            {"identity_source": question.identity_source}
            if question.identity_source is not None
            else {}
        )
        | ({"refusal": question.refusal} if question.refusal is not None else {})
        | (
            {"votes": list(question.votes), "tally": question.describe_votes()}
            if question.envelope.quorum is not None
            else {}
        )
    )


def unconfirmed(error: SendUnconfirmed) -> str:
    """What to say of a send the entry point did not confirm: nothing to retry, nothing to change."""
    cause = type(error.__cause__).__name__ if error.__cause__ else "no reply"
    return (
        f"sent, not confirmed: the entry point did not confirm it ({cause}); the question stays "
        "sending with this answer, and the sweeper (or agent-wait resend) sends it again"
    )


class Web:
    """One inbox app's store, sign-in and templates, and what its handlers do with them."""

    def __init__(
        self,
        store: QuestionStore,
        auth: InboxAuth,
        entry: EntryPoint | None,
        poll_interval: float,
        approvers: ApproverConfig,
    ) -> None:
        self.store = store
        self.auth = auth
        self.approvers = approvers
        self.oidc = auth.oidc.client() if auth.oidc is not None else None
        self.entry = entry
        self.poll_interval = poll_interval
        self.listing = Listing(store)
        self.templates = _templates()
        self.sessions = Sessions(SESSION_AGE)

    def identity(self, request: Request) -> Identity | None:
        auth = self.auth
        if auth.no_auth:
            return Identity(subject=auth.local_user, source="local")
        named = auth.from_proxy(request) or auth.from_provider(request)
        if named:
            return named
        if auth.bearer(request):
            return Identity(subject="api", source="api-token")
        kept, session = request.session.get("identity"), request.session.get("session")
        if not isinstance(kept, dict) or not isinstance(session, str):
            return None
        if self.sessions.revoked(session):
            request.session.clear()  # the response must not sign it again
            return None
        try:
            return Identity.model_validate(kept)
        except ValidationError:  # signed by an older inbox: sign in again
            request.session.clear()
            return None

    def sign_in(self, request: Request, who: Identity) -> None:
        """Keep ``who`` in a fresh session."""
        request.session.clear()
        request.session["identity"] = who.model_dump(mode="json")
        request.session["session"] = secrets.token_urlsafe(16)

    def visible(self, request: Request, page: Page) -> Page:
        """The page with only the questions the person may answer (an admin's: all of them)."""
        who = self.identity(request)
        if who is None:
            return Page([], page.next_cursor)
        kept = [q for q in page.questions if may_see(q, who, self.approvers)]
        return Page(kept, page.next_cursor)

    def login_links(self, request: Request, next_path: str) -> list[tuple[str, str]]:
        """``(label, sign-in URL)``: OpenID Connect first, then each single sign-on provider's."""
        links = self.auth.login_links(next_path)
        if self.auth.oidc is not None:
            target = f"{root(request)}/oidc/login?{urlencode({'next': next_path})}"
            links.insert(0, (self.auth.oidc.label, target))
        return links

    def csrf_token(self, request: Request) -> str:
        token = request.session.get("csrf")
        if not isinstance(token, str):
            token = secrets.token_urlsafe(24)
            request.session["csrf"] = token
        return token

    def csrf_ok(self, request: Request, offered: str | None) -> bool:
        if self.auth.bearer(request):
            return True  # a header browsers never send on their own
        token = request.session.get("csrf")
        return (
            isinstance(token, str)
            and offered is not None
            and secrets.compare_digest(token, offered)
        )

    def render(
        self, request: Request, name: str, status: int = 200, **context: Any
    ) -> HTMLResponse:
        who = self.identity(request)
        page = self.templates.get_template(name).render(
            request=request,
            user=who.subject if who else None,
            user_source=who.source if who else None,
            csrf=self.csrf_token(request),
            no_auth=self.auth.no_auth,
            root=root(request),
            now=now_text(),
            **context,
        )
        return HTMLResponse(page, status)

    def guarded(self, handler: Handler, *, api: bool = False) -> Handler:
        """``handler`` for a signed-in person only: the others go to sign in (API: 401)."""
        auth = self.auth

        async def run(request: Request) -> Response:
            # Without a login, the Host must be a loopback name too: a page whose own name an
            # attacker re-points at 127.0.0.1 (DNS rebinding) is refused.
            if auth.no_auth and not (auth.is_local(request) and is_loopback(request.url.hostname)):
                return PlainTextResponse(
                    "the inbox without authentication serves loopback only", 403
                )
            if self.identity(request) is None:
                if api:
                    return JSONResponse({"error": "not logged in"}, 401)
                links = self.login_links(request, request.url.path)
                if links and not auth.token:  # single sign-on is the only way in
                    return RedirectResponse(links[0][1], 303)
                return RedirectResponse(
                    f"{root(request)}/login?{urlencode({'next': request.url.path})}", 303
                )
            return await handler(request)

        return run

    def find(self, request: Request) -> StoredQuestion | None:
        """The question the path names (and ``thread``, when several threads asked its id)."""
        thread = request.query_params.get("thread") or None
        found = self.store.find(request.path_params["question_id"], thread)
        return found[0] if len(found) == 1 else None

    def answer_one(self, question: StoredQuestion, value: Any, by: Identity) -> Any:
        """Send the whole answer ``value`` through core's compare-and-set."""
        envelope = question.envelope
        return answer(
            envelope.question_id,
            answer=value,
            identity=by,
            thread_id=envelope.thread_id,
            store=self.store,
            entry=self.entry,
        )

    def answer_thread(
        self, thread_id: str, pairs: list[tuple[StoredQuestion, Any]], by: Identity
    ) -> Any:
        """One message answering every question of ``pairs``, through core's compare-and-set."""
        return answer_many(
            {q.envelope.question_id: value for q, value in pairs},
            identity=by,
            thread_id=thread_id,
            store=self.store,
            entry=self.entry,
        )
