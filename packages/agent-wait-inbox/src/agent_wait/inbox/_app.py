"""The inbox web app: list, inspect and answer questions; a JSON API; live updates."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.convertors import Convertor, register_url_convertor
from starlette.middleware import Middleware
from starlette.middleware.sessions import SessionMiddleware
from starlette.requests import Request
from starlette.responses import (
    HTMLResponse,
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agent_wait.core import (
    AgentWaitError,
    EntryPoint,
    QuestionClosed,
    QuestionNotFound,
    QuestionStore,
    SendUnconfirmed,
    StoredQuestion,
    answer,
    answer_many,
    default_store,
    log_safe,
)
from agent_wait.inbox._auth import InboxAuth, clean_name, is_loopback, provider_routes
from agent_wait.inbox._batch import batch_actions, mapping
from agent_wait.inbox._many import (
    ACTION,
    DECISIONS,
    WHOLE,
    Problem,
    Refused,
    answer_of_body,
    answer_problem,
    api_answers,
    check_all,
    form_answer,
    label,
)
from agent_wait.inbox._query import Filters, Listing, Page, function_of

logger = logging.getLogger("agent_wait.inbox")
_T = TypeVar("_T")

HERE = Path(__file__).parent
MAX_BODY = 64 * 1024
PAGE_SIZE = 50
SESSION_AGE = 12 * 3600
"""Seconds a session cookie lives after the last response that set it."""
MAX_LIMIT = 500
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


class _Limits:
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


class _Sessions:
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


def _when(text: str | None) -> str:
    return text or "no deadline"


def _overdue(question: StoredQuestion, now: str) -> bool:
    expires = question.envelope.expires_at
    return question.is_open and expires is not None and expires < now


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


def _compact(value: Any) -> str:
    """JSON text, escaped by the template like any text (never marked safe)."""
    return json.dumps(value, ensure_ascii=False)


def _function_name(envelope: Any) -> str:
    """The asking function's name for a heading, or "" (the template says "question")."""
    return function_of(envelope) or ""


@dataclass(frozen=True, slots=True)
class _ListRow:
    """One row of the open-questions list: plain text and links, escaped by the template."""

    deadline: str
    overdue: bool
    link: str
    function: str
    thread: str
    thread_link: str
    actions: str
    tags: list[tuple[str, str]]
    """``(key: value, link to the list filtered by that tag)``."""
    refusal: str | None
    """Why the agent refused the last answer (the question opened again), if it did."""


def _list_rows(questions: list[StoredQuestion], root: str, now: str) -> list[_ListRow]:
    """The rows of a list page.

    Built here rather than in the template: one object per row instead of a dozen filter calls
    and attribute lookups through Jinja.
    """
    quoted: dict[str, str] = {}  # the rows of a page share threads and tags: quote each once

    def q(text: str) -> str:
        found = quoted.get(text)
        if found is None:
            found = quoted[text] = quote(text, safe="")
        return found

    rows: list[_ListRow] = []
    for question in questions:
        e = question.envelope
        thread = q(e.thread_id)
        rows.append(
            _ListRow(
                deadline=_when(e.expires_at),
                overdue=_overdue(question, now),
                link=f"{root}/questions/{quote(e.question_id, safe='')}?thread={thread}",
                function=function_of(e) or "question",
                thread=e.thread_id,
                thread_link=f"{root}/?thread={thread}",
                actions=", ".join(e.allowed_actions),
                tags=[(f"{k}: {v}", f"{root}/?tag={q(f'{k}:{v}')}") for k, v in e.tags.items()],
                refusal=question.describe_refusal(),
            )
        )
    return rows


def _question_json(question: StoredQuestion) -> dict[str, Any]:
    return {
        "status": question.status,
        "answered_at": question.answered_at,
        "answered_by": question.answered_by,
        "answer": question.answer,
        "envelope": question.envelope.to_dict(),
    } | ({"refusal": question.refusal} if question.refusal is not None else {})


def _page_json(page: Page) -> dict[str, Any]:
    return {
        "questions": [_question_json(q) for q in page.questions],
        "next_cursor": page.next_cursor,
    }


def inbox_app(
    store: QuestionStore | None = None,
    auth: InboxAuth | None = None,
    *,
    entry: EntryPoint | None = None,
    poll_interval: float = 1.0,
) -> Starlette:
    """The inbox web app, an ASGI application to serve with uvicorn or mount in another app.

    Args:
        store: The question store (default: the inbox of the configured sqlite announcer).
        auth: Who may answer (default: :class:`InboxAuth` from the environment, which needs
            ``AGENT_WAIT_INBOX_TOKEN``).
        entry: Where answers are sent (default: where each question's ``reply_to`` names,
            else the configured entry point, as :func:`agent_wait.core.answer` chooses).
        poll_interval: Seconds between checks of the store for live updates.
    """
    store = store if store is not None else default_store()
    auth = auth if auth is not None else InboxAuth()
    listing = Listing(store)
    templates = Environment(
        loader=FileSystemLoader(HERE / "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        # The templates are package files: compiled once, never stat()ed again per request.
        auto_reload=False,
    )
    templates.filters["pretty"] = _pretty
    templates.filters["when"] = _when
    templates.filters["compact"] = _compact
    templates.filters["function"] = _function_name
    sessions = _Sessions(SESSION_AGE)

    def identity(request: Request) -> str | None:
        if auth.no_auth:
            return auth.local_user
        named = auth.from_proxy(request) or auth.from_provider(request)
        if named:
            return named
        if auth.bearer(request):
            return "api"
        user, session = request.session.get("user"), request.session.get("session")
        if not isinstance(user, str) or not isinstance(session, str):
            return None
        if sessions.revoked(session):
            request.session.clear()  # the response must not sign it again
            return None
        return user

    def csrf_token(request: Request) -> str:
        token = request.session.get("csrf")
        if not isinstance(token, str):
            token = secrets.token_urlsafe(24)
            request.session["csrf"] = token
        return token

    def csrf_ok(request: Request, offered: str | None) -> bool:
        if auth.bearer(request):
            return True  # a header browsers never send on their own
        token = request.session.get("csrf")
        return (
            isinstance(token, str)
            and offered is not None
            and secrets.compare_digest(token, offered)
        )

    def render(request: Request, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        page = templates.get_template(name).render(
            request=request,
            user=identity(request),
            csrf=csrf_token(request),
            no_auth=auth.no_auth,
            root=root(request),
            now=_now(),
            **context,
        )
        return HTMLResponse(page, status)

    def guarded(handler: Handler, *, api: bool = False) -> Handler:
        async def run(request: Request) -> Response:
            # Without a login, the Host must be a loopback name too: a page whose own name an
            # attacker re-points at 127.0.0.1 (DNS rebinding) is refused.
            if auth.no_auth and not (auth.is_local(request) and is_loopback(request.url.hostname)):
                return PlainTextResponse(
                    "the inbox without authentication serves loopback only", 403
                )
            if identity(request) is None:
                if api:
                    return JSONResponse({"error": "not logged in"}, 401)
                links = auth.login_links(request.url.path)
                if links and not auth.token:  # single sign-on is the only way in
                    return RedirectResponse(links[0][1], 303)
                return RedirectResponse(
                    f"{root(request)}/login?{urlencode({'next': request.url.path})}", 303
                )
            return await handler(request)

        return run

    async def login(request: Request) -> Response:
        if request.method == "GET":
            target = _safe_next(request, request.query_params.get("next"))
            return render(
                request,
                "login.html",
                next=target,
                sso=auth.login_links(target),
                has_token=bool(auth.token),
            )
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page", 403)
        name = clean_name(fields.get("name", ""))
        if name is None or not auth.check_token(fields.get("token", "")):
            logger.warning("failed inbox login from %s", auth.origin(request) or "?")
            return render(
                request,
                "login.html",
                401,
                error="wrong name or secret",
                next=root(request) + "/",
                sso=auth.login_links(root(request) + "/"),
                has_token=bool(auth.token),
            )
        request.session.clear()
        request.session["user"] = name
        request.session["session"] = secrets.token_urlsafe(16)
        return RedirectResponse(_safe_next(request, fields.get("next")), 303)

    async def logout(request: Request) -> Response:
        form = await request.form()
        offered = form.get("csrf")
        if not csrf_ok(request, offered if isinstance(offered, str) else None):
            return PlainTextResponse("the form expired; reload the page", 403)
        session = request.session.get("session")
        if isinstance(session, str):
            sessions.revoke(session)
        request.session.clear()
        return RedirectResponse(f"{root(request)}/login", 303)

    def filters_of(request: Request) -> Filters:
        return Filters.parse(request.query_params)

    def list_page(request: Request) -> Response:
        try:
            filters = filters_of(request)
            # The marker is read before the page, so a change that lands while it renders
            # still reaches it live.
            marker = listing.change_marker()
            page = listing.open_page(filters, request.query_params.get("after"), PAGE_SIZE)
        except ValueError as error:
            return render(
                request,
                "list.html",
                400,
                error=str(error),
                rows=[],
                filters=Filters(),
                next_link=None,
                marker=listing.change_marker(),
            )
        next_link = (
            f"{root(request)}/?" + urlencode({**filters.query(), "after": page.next_cursor})
            if page.next_cursor
            else None
        )
        return render(
            request,
            "list.html",
            rows=_list_rows(page.questions, root(request), _now()),
            filters=filters,
            next_link=next_link,
            marker=marker,
        )

    async def index(request: Request) -> Response:
        # Query and render in one worker thread: one hop off the event loop per page.
        return await run_in_threadpool(list_page, request)

    async def history(request: Request) -> Response:
        try:
            filters = filters_of(request)
            page = await run_in_threadpool(
                listing.history_page, filters, request.query_params.get("after"), PAGE_SIZE
            )
        except ValueError as error:
            return render(
                request,
                "history.html",
                400,
                error=str(error),
                page=Page([], None),
                filters=Filters(),
                next_link=None,
                has_history=listing.has_history,
            )
        next_link = (
            f"{root(request)}/history?" + urlencode({**filters.query(), "after": page.next_cursor})
            if page.next_cursor
            else None
        )
        return render(
            request,
            "history.html",
            page=page,
            filters=filters,
            next_link=next_link,
            has_history=listing.has_history,
        )

    def find(request: Request) -> StoredQuestion | None:
        thread = request.query_params.get("thread") or None
        found = store.find(request.path_params["question_id"], thread)
        return found[0] if len(found) == 1 else None

    async def detail(
        request: Request,
        message: str | None = None,
        status: int = 200,
        whole: tuple[str, str] | None = None,
    ) -> Response:
        """The question's page; ``whole`` is the (text, kind) of a refused whole answer, kept."""
        marker = await run_in_threadpool(listing.change_marker)
        question = await run_in_threadpool(find, request)
        if question is None:
            return render(request, "missing.html", 404)
        envelope = question.envelope
        earlier = [
            q
            for q in await run_in_threadpool(listing.thread, envelope.thread_id)
            if q.envelope.question_id != envelope.question_id
        ]
        body = mapping(envelope.question)
        return render(
            request,
            "detail.html",
            status,
            q=question,
            e=envelope,
            body=body,
            actions=batch_actions(envelope.question),
            earlier=earlier,
            message=message,
            overdue=_overdue(question, _now()),
            marker=marker,
            whole=whole[0] if whole else "",
            whole_as=whole[1] if whole else ("json" if envelope.answer_schema else "text"),
        )

    async def show(request: Request) -> Response:
        return await detail(request)

    def do_answer(question: StoredQuestion, value: Any, by: str) -> Any:
        """Send the whole answer ``value`` through core's compare-and-set."""
        envelope = question.envelope
        return answer(
            envelope.question_id,
            answer=value,
            by=by,
            thread_id=envelope.thread_id,
            store=store,
            entry=entry,
        )

    async def answer_form(request: Request) -> Response:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page and answer again", 403)
        question = await run_in_threadpool(find, request)
        if question is None:
            return render(request, "missing.html", 404)
        whole: tuple[str, str] | None = None
        if fields.get("send") == WHOLE:
            whole = (fields.get("whole", ""), fields.get("whole_as", "text"))
            choice = WHOLE
        elif batch_actions(question.envelope.question) is not None:
            choice = DECISIONS
        else:
            choice = fields.get("action", "")
        try:
            value = form_answer(question, fields, choice)
            # Not allowed or not matching the answer schema: said, not sent.
            problem = answer_problem(question, value)
            if problem:
                raise ValueError(problem)
        except (AgentWaitError, ValueError) as error:
            return await detail(request, f"Not sent: {error}", 400, whole)
        by = identity(request) or "unknown"
        try:
            await run_in_threadpool(do_answer, question, value, by)
        except QuestionClosed as closed:
            return await detail(
                request, f"Not sent: already {closed.question.describe_close()}.", 409
            )
        except SendUnconfirmed as error:
            return await detail(request, f"{_unconfirmed(error)}.", 502)
        except (AgentWaitError, ValueError) as error:
            # No longer found, or refused by core's own checks: said, not sent.
            return await detail(request, f"Not sent: {error}", 400, whole)
        except Exception as error:  # noqa: BLE001 - the entry point failed; shown, not traced
            logger.error(
                "answer to %s not sent: %s",
                log_safe(question.envelope.question_id),
                type(error).__name__,
            )
            return await detail(
                request,
                f"Not sent: the entry point failed ({type(error).__name__}); try again.",
                502,
            )
        return RedirectResponse(
            f"{root(request)}/questions/{request.path_params['question_id']}?"
            + urlencode({"thread": question.envelope.thread_id, "sent": "1"}),
            303,
        )

    async def thread_page(
        request: Request,
        message: str | None = None,
        status: int = 200,
        *,
        problems: Mapping[str, str] | None = None,
        kept: Mapping[str, Mapping[str, str]] | None = None,
        outcomes: list[tuple[StoredQuestion, str]] | None = None,
    ) -> Response:
        """A thread's questions; its open ones answered together in one message.

        ``problems`` (by question id) and ``kept`` (the fields typed for each question, by
        question id) redisplay a refused form; ``outcomes`` say per question what happened.
        """
        thread_id = request.path_params["thread_id"]
        marker = await run_in_threadpool(listing.change_marker)
        questions = await run_in_threadpool(listing.thread, thread_id)
        if not questions:
            return render(request, "missing.html", 404)
        still_open = [q for q in questions if q.is_open]
        by_id = {q.envelope.question_id: q for q in questions}
        wanted = request.query_params.getlist("sent") if status == 200 else []
        sent = [by_id[i] for i in wanted if i in by_id and not by_id[i].is_open]
        # The typed fields follow their question to its place in this rendering of the form.
        posted = {
            f"q.{index}.{name}": value
            for index, q in enumerate(still_open)
            for name, value in (kept or {}).get(q.envelope.question_id, {}).items()
        }
        return render(
            request,
            "thread.html",
            status,
            thread_id=thread_id,
            open_questions=still_open,
            closed_questions=[q for q in questions if not q.is_open],
            sent=sent,
            message=message,
            problems=problems or {},
            posted=posted,
            outcomes=outcomes or [],
            batch_actions=batch_actions,
            mapping=mapping,
            overdue=_overdue,
            marker=marker,
        )

    async def show_thread(request: Request) -> Response:
        if request.method == "POST":
            return await thread_form(request)
        return await thread_page(request)

    def send_many(thread_id: str, pairs: list[tuple[StoredQuestion, Any]], by: str) -> Any:
        """One message answering every question of ``pairs``, through core's compare-and-set."""
        return answer_many(
            {q.envelope.question_id: value for q, value in pairs},
            by=by,
            thread_id=thread_id,
            store=store,
            entry=entry,
        )

    def outcomes_of(thread_id: str, question_ids: list[str]) -> list[tuple[StoredQuestion, str]]:
        """What became of each question after nothing was sent: still open, or closed by whom."""
        now = {q.envelope.question_id: q for q in listing.thread(thread_id)}
        return [
            (
                now[i],
                "not sent; still open" if now[i].is_open else f"already {now[i].describe_close()}",
            )
            for i in question_ids
            if i in now
        ]

    async def thread_form(request: Request) -> Response:
        form = await request.form()
        fields = {k: v for k, v in form.items() if isinstance(v, str)}
        if not csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page and answer again", 403)
        thread_id = request.path_params["thread_id"]
        questions = await run_in_threadpool(listing.thread, thread_id)
        by_id = {q.envelope.question_id: q for q in questions}
        kept: dict[str, dict[str, str]] = {}
        chosen: list[tuple[str, Any]] = []
        problems: list[Problem] = []
        for index in _form_indexes(fields):
            prefix = f"q.{index}."
            question_id = fields[f"{prefix}id"]
            own = {k[len(prefix) :]: v for k, v in fields.items() if k.startswith(prefix)}
            kept[question_id] = own
            choice = own.get("send", "")
            if not choice:
                continue  # left open
            question = by_id.get(question_id)
            if question is None:
                problems.append(
                    Problem(question_id, f"question {question_id[:80]!r}: not in this thread")
                )
                continue
            try:
                if choice.startswith(ACTION):
                    choice = choice.removeprefix(ACTION)
                elif choice not in (WHOLE, DECISIONS):
                    raise ValueError(
                        f"send: expected an action, decisions or whole, got {choice[:40]!r}"
                    )
                chosen.append((question_id, form_answer(question, own, choice)))
            except ValueError as error:
                problems.append(Problem(question_id, f"{label(question)}: {error}"))
        if not problems and not chosen:
            message = "Not sent: choose an answer for at least one question (the others stay open)."
            return await thread_page(request, message, 400, kept=kept)
        try:
            pairs = check_all(thread_id, questions, chosen)
            if problems:
                raise Refused(400, [])
        except Refused as refused:
            if refused.status == 400:
                # Every refused answer at once, in the form's order: the typing ones and the rest.
                order = list(kept)
                refused = Refused(
                    400,
                    sorted(
                        [*problems, *refused.problems], key=lambda p: order.index(p.question_id)
                    ),
                )
            return await _thread_refused(request, refused, kept, [i for i, _ in chosen])
        except AgentWaitError as error:  # an answer_schema that cannot be checked
            return await thread_page(request, f"Not sent: {error}", 400, kept=kept)
        by = identity(request) or "unknown"
        try:
            result = await run_in_threadpool(send_many, thread_id, pairs, by)
        except QuestionClosed as closed:
            refused = Refused(
                409,
                [
                    Problem(
                        closed.question.envelope.question_id,
                        f"{label(closed.question)}: already {closed.question.describe_close()}",
                    )
                ],
                [closed.question],
            )
            return await _thread_refused(request, refused, kept, [i for i, _ in chosen])
        except SendUnconfirmed as error:
            return await thread_page(request, f"{_unconfirmed(error)}.", 502)
        except (AgentWaitError, ValueError) as error:
            return await thread_page(request, f"Not sent: {error}", 400, kept=kept)
        except Exception as error:  # noqa: BLE001 - the entry point failed; shown, not traced
            logger.error(
                "answers to thread %s not sent: %s", log_safe(thread_id), type(error).__name__
            )
            return await thread_page(
                request,
                f"Not sent: the entry point failed ({type(error).__name__}); try again.",
                502,
                kept=kept,
            )
        sent = [("sent", q.envelope.question_id) for q in result.questions]
        return RedirectResponse(
            f"{root(request)}/threads/{quote(thread_id)}?{urlencode(sent)}", 303
        )

    async def _thread_refused(
        request: Request, refused: Refused, kept: Mapping[str, Mapping[str, str]], ids: list[str]
    ) -> Response:
        thread_id = request.path_params["thread_id"]
        outcomes = (
            await run_in_threadpool(outcomes_of, thread_id, ids) if refused.status == 409 else None
        )
        return await thread_page(
            request,
            "Nothing sent: " + "; ".join(p.error for p in refused.problems) + ".",
            refused.status,
            problems={p.question_id: p.error for p in refused.problems},
            kept=kept,
            outcomes=outcomes,
        )

    # --- JSON API ------------------------------------------------------------------------

    async def api_list(request: Request) -> Response:
        params = request.query_params
        if refused := _unknown_parameter(request, "/api/questions", "get"):
            return refused
        try:
            filters = filters_of(request)
            status = params.get("status", "open")
            if status not in ("open", "closed"):
                raise ValueError(f"status: expected open or closed, got {status[:40]!r}")
            getter = listing.history_page if status == "closed" else listing.open_page
            page = await run_in_threadpool(getter, filters, params.get("after"), _limit(params))
        except ValueError as error:
            return JSONResponse({"error": str(error)}, 400)
        return JSONResponse(_page_json(page))

    async def api_get(request: Request) -> Response:
        if refused := _unknown_parameter(request, "/api/questions/{question_id}", "get"):
            return refused
        question = await run_in_threadpool(find, request)
        if question is None:
            return JSONResponse(
                {"error": "no such question (name the thread if several asked it)"}, 404
            )
        return JSONResponse(_question_json(question))

    async def json_body(request: Request) -> Any:
        """The request's JSON body; ValueError if it is not JSON."""
        try:
            body = json.loads(await request.body())
            # A lone surrogate parses, but is not text an answer (or a message naming it) can hold.
            json.dumps(body, ensure_ascii=False).encode()
        except UnicodeEncodeError:
            raise ValueError("body: not valid Unicode text (a lone surrogate)") from None
        except ValueError:
            raise ValueError("body: expected a JSON object") from None
        return body

    async def posted(request: Request, path: str, parse: Callable[[Any], _T]) -> _T | Response:
        """A POST to the JSON API: its body as ``parse`` reads it, or the response refusing it.

        Refused: a query parameter ``path`` does not take, a session's missing or wrong CSRF
        header, or a body ``parse`` rejects (ValueError, whose message is the error).
        """
        if refused := _unknown_parameter(request, path, "post"):
            return refused
        if not csrf_ok(request, request.headers.get("x-csrf-token")):
            return JSONResponse({"error": "missing or wrong X-CSRF-Token"}, 403)
        try:
            return parse(await json_body(request))
        except ValueError as error:
            return JSONResponse({"error": str(error)}, 400)

    async def api_answer(request: Request) -> Response:
        value = await posted(request, "/api/questions/{question_id}/answer", answer_of_body)
        if isinstance(value, Response):
            return value
        question = await run_in_threadpool(find, request)
        if question is None:
            return JSONResponse({"error": "no such question"}, 404)
        try:
            # Refused here, before the question is closed: the host would refuse it too.
            problem = answer_problem(question, value)
        except AgentWaitError as error:
            return JSONResponse({"error": str(error)}, 400)
        if problem:
            return JSONResponse({"error": problem}, 400)
        by = identity(request) or "unknown"
        try:
            result = await run_in_threadpool(do_answer, question, value, by)
        except QuestionClosed as closed:
            return JSONResponse(
                {
                    "error": f"already {closed.question.describe_close()}",
                    "question": _question_json(closed.question),
                },
                409,
            )
        except SendUnconfirmed as error:
            return JSONResponse({"error": _unconfirmed(error)}, 502)
        except (AgentWaitError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        except Exception as error:  # noqa: BLE001 - the entry point failed; reported, not traced
            logger.error(
                "answer to %s not sent: %s",
                log_safe(question.envelope.question_id),
                type(error).__name__,
            )
            return _not_sent(error)
        return JSONResponse(_question_json(result.question))

    async def api_answers_of_thread(request: Request) -> Response:
        answers = await posted(request, "/api/threads/{thread_id}/answers", api_answers)
        if isinstance(answers, Response):
            return answers
        thread_id = request.path_params["thread_id"]
        questions = await run_in_threadpool(listing.thread, thread_id)
        try:
            pairs = check_all(thread_id, questions, answers)
        except Refused as refused:
            return JSONResponse(_refused_json(refused), refused.status)
        except AgentWaitError as error:  # an answer_schema that cannot be checked
            return JSONResponse({"error": str(error)}, 400)
        by = identity(request) or "unknown"
        try:
            result = await run_in_threadpool(send_many, thread_id, pairs, by)
        except QuestionClosed as closed:
            lost = closed.question
            problem = Problem(
                lost.envelope.question_id, f"{label(lost)}: already {lost.describe_close()}"
            )
            return JSONResponse(_refused_json(Refused(409, [problem], [lost])), 409)
        except QuestionNotFound as error:  # removed from the store since it was read
            return JSONResponse({"error": str(error)}, 404)
        except SendUnconfirmed as error:
            return JSONResponse({"error": _unconfirmed(error)}, 502)
        except (AgentWaitError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        except Exception as error:  # noqa: BLE001 - the entry point failed; reported, not traced
            logger.error(
                "answers to thread %s not sent: %s", log_safe(thread_id), type(error).__name__
            )
            return _not_sent(error)
        return JSONResponse({"questions": [_question_json(q) for q in result.questions]})

    async def openapi(request: Request) -> Response:
        return JSONResponse(OPENAPI)

    async def events(request: Request) -> Response:
        async def stream() -> AsyncIterator[str]:
            # The page says which state it showed, so a change between rendering it and this
            # stream opening is still reported.
            marker = request.query_params.get("since") or await run_in_threadpool(
                listing.change_marker
            )
            yield "retry: 3000\n\n"
            while not await request.is_disconnected():
                await asyncio.sleep(poll_interval)
                current = await run_in_threadpool(listing.change_marker)
                if current != marker:
                    marker = current
                    yield "event: changed\ndata: {}\n\n"
                else:
                    yield ": idle\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    routes = [
        Route("/", guarded(index)),
        Route("/history", guarded(history)),
        Route("/login", login, methods=["GET", "POST"]),
        Route("/logout", logout, methods=["POST"]),
        Route("/questions/{question_id}", guarded(show)),
        Route("/questions/{question_id}/answer", guarded(answer_form), methods=["POST"]),
        Route("/threads/{thread_id:thread}", guarded(show_thread), methods=["GET", "POST"]),
        Route("/events", guarded(events)),
        Route("/healthz", health),
        Route("/api/openapi.json", openapi),
        Route("/api/questions", guarded(api_list, api=True)),
        Route("/api/questions/{question_id}", guarded(api_get, api=True)),
        Route(
            "/api/questions/{question_id}/answer", guarded(api_answer, api=True), methods=["POST"]
        ),
        # A thread id may hold "/": the answers endpoint is the path's last segment.
        Route(
            "/api/threads/{thread_id:thread}/answers",
            guarded(api_answers_of_thread, api=True),
            methods=["POST"],
        ),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        *(
            Mount(f"/sso/{name}", routes=provider_routes(provider))
            for name, provider in auth.providers.items()
            if provider_routes(provider)
        ),
    ]

    return Starlette(
        routes=routes,
        middleware=[
            Middleware(_Limits),
            Middleware(
                SessionMiddleware,
                secret_key=auth.session_secret,
                session_cookie="agent_wait_inbox",
                same_site="strict",
                https_only=auth.secure_cookie,
                max_age=SESSION_AGE,
            ),
        ],
    )


def _limit(params: Mapping[str, str]) -> int:
    """The ``limit`` query parameter: 1 to ``MAX_LIMIT`` rows, ``PAGE_SIZE`` when absent."""
    text = params.get("limit")
    if text is None:
        return PAGE_SIZE
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ValueError(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {text[:40]!r}")
    return int(text)


def root(request: Request) -> str:
    """The path the app is mounted at ("" at the root of its server)."""
    return str(request.scope.get("root_path", "")).rstrip("/")


def _safe_next(request: Request, target: str | None) -> str:
    """Only a local path: the login form never redirects to another site."""
    if target and target.startswith("/") and not target.startswith("//") and "\\" not in target:
        return target
    return root(request) + "/"


_QUESTION = {"$ref": "#/components/schemas/StoredQuestion"}
_ID = [
    {"name": "question_id", "in": "path", "required": True, "schema": {"type": "string"}},
    {
        "name": "thread",
        "in": "query",
        "schema": {"type": "string"},
        "description": "The thread, needed only when several threads asked the same id.",
    },
]


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}},
    }


_REFUSED = {
    "401": _error("No login, no proxy identity and no bearer token"),
    "403": _error("Refused: the inbox without authentication serves loopback only"),
}
OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "agent-wait inbox", "version": "1"},
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "StoredQuestion": {
                "type": "object",
                "required": ["status", "answered_at", "answered_by", "answer", "envelope"],
                "properties": {
                    "status": {"enum": ["open", "answered", "expired", "cancelled"]},
                    "answered_at": {"type": ["string", "null"], "format": "date-time"},
                    "answered_by": {"type": ["string", "null"]},
                    "answer": {},
                    "envelope": {"type": "object", "description": "The wait.created envelope."},
                },
            },
            "Error": {
                "type": "object",
                "required": ["error"],
                "properties": {
                    "error": {"type": "string", "description": "What was wrong, naming the field"},
                    "question": _QUESTION,
                    "question_id": {
                        "type": "string",
                        "description": "Several answers: the question of the first problem",
                    },
                    "problems": {
                        "type": "array",
                        "description": "Several answers: one per refused answer, in order",
                        "items": {
                            "type": "object",
                            "required": ["question_id", "error"],
                            "properties": {
                                "question_id": {"type": "string"},
                                "error": {"type": "string"},
                            },
                        },
                    },
                },
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/api/questions": {
            "get": {
                "summary": "Open questions, earliest deadline first (status=closed: history)",
                "parameters": [
                    {"name": "status", "in": "query", "schema": {"enum": ["open", "closed"]}},
                    *(
                        {"name": p, "in": "query", "schema": {"type": "string"}}
                        for p in ("tag", "function", "thread", "q", "after")
                    ),
                    {
                        "name": "limit",
                        "in": "query",
                        "schema": {"type": "integer", "minimum": 1, "maximum": MAX_LIMIT},
                    },
                ],
                "responses": {
                    "200": {
                        "description": "A page",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["questions", "next_cursor"],
                                    "properties": {
                                        "questions": {"type": "array", "items": _QUESTION},
                                        "next_cursor": {"type": ["string", "null"]},
                                    },
                                }
                            }
                        },
                    },
                    "400": _error("A malformed parameter (the message names it)"),
                    **_REFUSED,
                },
            }
        },
        "/api/questions/{question_id}": {
            "get": {
                "summary": "One question",
                "parameters": _ID,
                "responses": {
                    "200": {
                        "description": "The question",
                        "content": {"application/json": {"schema": _QUESTION}},
                    },
                    "400": _error("An unknown query parameter (the message names it)"),
                    "404": _error("No such question"),
                    **_REFUSED,
                },
            }
        },
        "/api/questions/{question_id}/answer": {
            "post": {
                "summary": "Answer it (the answer is sent to the agent's entry point)",
                "parameters": _ID,
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "description": "With action: the answer is {action, ...answer}. "
                                "Without: answer is the whole answer, any JSON but null, for a "
                                "question whose code expects its own shape.",
                                "anyOf": [{"required": ["action"]}, {"required": ["answer"]}],
                                "properties": {
                                    "action": {"type": "string"},
                                    "answer": {},
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "Answered",
                        "content": {"application/json": {"schema": _QUESTION}},
                    },
                    "400": _error(
                        "Action not allowed, answer not matching the question's answer_schema, "
                        "a malformed body or an unknown query parameter"
                    ),
                    "403": _error("A session without the X-CSRF-Token header"),
                    "401": _REFUSED["401"],
                    "404": _error("No such question"),
                    "409": _error("Already answered, expired or cancelled: who, when"),
                    "413": {"description": "Request body too large"},
                    "502": _error("The entry point did not take the answer; try again"),
                },
            }
        },
        "/api/threads/{thread_id}/answers": {
            "post": {
                "summary": "Answer several open questions of one thread in one message (the run "
                "resumes once): all of them are sent, or none",
                "parameters": [
                    {
                        "name": "thread_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "required": ["answers"],
                                "properties": {
                                    "answers": {
                                        "type": "array",
                                        "minItems": 1,
                                        "description": "In the order to send them: the first is "
                                        "the message's answer, the others its more_answers. Each "
                                        "is a single answer's body plus the question's id.",
                                        "items": {
                                            "type": "object",
                                            "required": ["question_id"],
                                            "anyOf": [
                                                {"required": ["action"]},
                                                {"required": ["answer"]},
                                            ],
                                            "properties": {
                                                "question_id": {"type": "string", "minLength": 1},
                                                "action": {"type": "string", "minLength": 1},
                                                "answer": {},
                                            },
                                        },
                                    }
                                },
                            }
                        }
                    },
                },
                "responses": {
                    "200": {
                        "description": "Every question answered, in one message",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["questions"],
                                    "properties": {
                                        "questions": {"type": "array", "items": _QUESTION}
                                    },
                                }
                            }
                        },
                    },
                    "400": _error(
                        "Nothing sent: a malformed body, a question answered twice, or answers "
                        "refused (action not allowed, decisions, edited args, answer_schema): "
                        "problems names each question and field"
                    ),
                    "403": _error("A session without the X-CSRF-Token header"),
                    "401": _REFUSED["401"],
                    "404": _error("Nothing sent: a question id the thread does not have"),
                    "409": _error(
                        "Nothing sent: one of them was already answered, expired or cancelled "
                        "(question: who, when)"
                    ),
                    "413": {"description": "Request body too large"},
                    "502": _error("The entry point did not take the message; try again"),
                },
            }
        },
    },
}


def _form_indexes(fields: Mapping[str, str]) -> list[int]:
    """The questions of a thread form, by the index of their ``q.<i>.id`` fields, in order."""
    found: list[int] = []
    for key in fields:
        index, dot, rest = key.removeprefix("q.").partition(".")
        if key.startswith("q.") and dot and rest == "id" and index.isascii() and index.isdigit():
            found.append(int(index))
    return sorted(found)


def _refused_json(refused: Refused) -> dict[str, Any]:
    """A refused set of answers: the first problem, its question, every problem, who closed."""
    first = refused.problems[0]
    body: dict[str, Any] = {
        "error": "; ".join(p.error for p in refused.problems) + "; nothing sent",
        "question_id": first.question_id,
        "problems": [{"question_id": p.question_id, "error": p.error} for p in refused.problems],
    }
    if refused.closed:
        body["question"] = _question_json(refused.closed[0])
    return body


def _not_sent(error: Exception) -> Response:
    """The 502 for an answer the entry point failed to send (already logged): it can be retried."""
    return JSONResponse(
        {"error": f"not sent: the entry point failed ({type(error).__name__}); try again"}, 502
    )


def _unconfirmed(error: SendUnconfirmed) -> str:
    """What to say of a send the entry point did not confirm: nothing to retry, nothing to change."""
    cause = type(error.__cause__).__name__ if error.__cause__ else "no reply"
    return (
        f"sent, not confirmed: the entry point did not confirm it ({cause}); the question stays "
        "sending with this answer, and the sweeper (or agent-wait resend) sends it again"
    )


def _unknown_parameter(request: Request, path: str, method: str) -> Response | None:
    """A 400 naming a query parameter the OpenAPI document does not list for the operation.

    A misspelt filter (``fuction=refund``) would otherwise be ignored and list everything.
    """
    known = {
        parameter["name"]
        for parameter in OPENAPI["paths"][path][method]["parameters"]
        if parameter["in"] == "query"
    }
    for name in request.query_params:
        if name not in known:
            expected = f"expected one of {', '.join(sorted(known))}" if known else "it takes none"
            return JSONResponse(
                {"error": f"{name[:40]!r}: not a query parameter of this operation ({expected})"},
                400,
            )
    return None
