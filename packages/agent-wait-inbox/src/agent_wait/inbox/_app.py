"""The inbox web app: list, inspect and answer questions; a JSON API; live updates."""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlencode

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
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
    QuestionStore,
    StoredQuestion,
    answer,
    default_store,
)
from agent_wait.inbox._auth import InboxAuth, clean_name, is_loopback, provider_routes
from agent_wait.inbox._batch import (
    batch_actions,
    decisions_from_form,
    decisions_problem,
    edited,
    mapping,
    summary,
)
from agent_wait.inbox._query import Filters, Listing, Page, function_of

logger = logging.getLogger("agent_wait.inbox")

HERE = Path(__file__).parent
MAX_BODY = 64 * 1024
PAGE_SIZE = 50
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


Handler = Callable[[Request], Awaitable[Response]]


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


def _question_json(question: StoredQuestion) -> dict[str, Any]:
    return {
        "status": question.status,
        "answered_at": question.answered_at,
        "answered_by": question.answered_by,
        "answer": question.answer,
        "envelope": question.envelope.to_dict(),
    }


def _page_json(page: Page) -> dict[str, Any]:
    return {
        "questions": [_question_json(q) for q in page.questions],
        "next_cursor": page.next_cursor,
    }


WHOLE_KINDS = ("text", "json")


def whole_answer(text: str, kind: str) -> Any:
    """The whole answer typed in a question's answer box: the text itself, or the JSON it holds."""
    if kind not in WHOLE_KINDS:
        raise ValueError(f"whole_as: expected text or json, got {kind[:40]!r}")
    if not text.strip():
        raise ValueError("answer: empty; type the answer the question expects")
    if kind == "text":
        return text
    try:
        value = json.loads(text)
    except ValueError as error:
        raise ValueError(f"answer: not valid JSON ({error})") from None
    if value is None:
        raise ValueError("answer: null is not an answer")
    return value


def api_body(body: Any) -> tuple[str | None, Any]:
    """The JSON API's answer body: ``(action, more fields)`` or ``(None, the whole answer)``."""
    if not isinstance(body, dict):
        raise ValueError('body: expected {"action": "...", "answer": {...}} or {"answer": ...}')
    fields = cast("dict[str, Any]", body)
    if "action" in fields:
        action, extra = fields["action"], fields.get("answer")
        if not isinstance(action, str):
            raise ValueError(f"action: expected a string such as 'approve', got {action!r}"[:200])
        if extra is not None and not isinstance(extra, dict):
            raise ValueError("answer: with an action, expected a JSON object of more fields")
        return action, cast("dict[str, Any] | None", extra) or None
    if fields.get("answer") is None:
        raise ValueError(
            'body: expected {"action": "...", "answer": {...}}, or {"answer": ...} (any JSON '
            "but null) for the whole answer"
        )
    return None, fields["answer"]


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
    )
    templates.filters["pretty"] = _pretty
    templates.filters["when"] = _when
    templates.filters["compact"] = _compact
    templates.filters["function"] = _function_name

    def identity(request: Request) -> str | None:
        if auth.no_auth:
            return auth.local_user
        named = auth.from_proxy(request) or auth.from_provider(request)
        if named:
            return named
        if auth.bearer(request):
            return "api"
        user = request.session.get("user")
        return user if isinstance(user, str) else None

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
            if auth.no_auth and not (
                is_loopback(request.client.host if request.client else None)
                and is_loopback(request.url.hostname)
            ):
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
            logger.warning(
                "failed inbox login from %s", request.client.host if request.client else "?"
            )
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
        return RedirectResponse(_safe_next(request, fields.get("next")), 303)

    async def logout(request: Request) -> Response:
        form = await request.form()
        offered = form.get("csrf")
        if not csrf_ok(request, offered if isinstance(offered, str) else None):
            return PlainTextResponse("the form expired; reload the page", 403)
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
                page=Page([], None),
                filters=Filters(),
                next_link=None,
                overdue=_overdue,
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
            page=page,
            filters=filters,
            next_link=next_link,
            overdue=_overdue,
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

    def do_answer(question: StoredQuestion, action: str | None, value: Any, by: str) -> Any:
        """``action`` with the fields ``value``, or (no action) the whole answer ``value``."""
        envelope = question.envelope
        return answer(
            envelope.question_id,
            action,
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
        action: str | None = fields.get("action", "")
        extra: Any = {}
        actions = batch_actions(question.envelope.question)
        whole: tuple[str, str] | None = None
        try:
            if fields.get("send") == "whole":
                whole = (fields.get("whole", ""), fields.get("whole_as", "text"))
                action, extra = None, whole_answer(*whole)
            elif actions is not None:
                extra["decisions"] = decisions_from_form(actions, fields)
                action = summary(extra["decisions"])
            else:
                asked = mapping(mapping(question.envelope.question).get("args"))
                args = edited(asked, fields, "arg.", "args")
                if args is not None:
                    extra["args"] = args
        except ValueError as error:
            return await detail(request, f"Not sent: {error}", 400, whole)
        reason = fields.get("reason", "").strip()
        if reason and actions is None and whole is None:
            extra["reason"] = reason[:2000]
        by = identity(request) or "unknown"
        try:
            # A whole answer is sent as typed, even when falsy (0, false, ""); fields only if any.
            value = extra if whole is not None else extra or None
            await run_in_threadpool(do_answer, question, action, value, by)
        except QuestionClosed as closed:
            return await detail(
                request, f"Not sent: already {closed.question.describe_close()}.", 409
            )
        except (AgentWaitError, ValueError) as error:
            # Not allowed, not matching the answer schema, or no longer found: said, not sent.
            return await detail(request, f"Not sent: {error}", 400, whole)
        except Exception as error:  # noqa: BLE001 - the entry point failed; shown, not traced
            logger.error(
                "answer to %s not sent: %s", question.envelope.question_id, type(error).__name__
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

    async def api_answer(request: Request) -> Response:
        if refused := _unknown_parameter(request, "/api/questions/{question_id}/answer", "post"):
            return refused
        if not csrf_ok(request, request.headers.get("x-csrf-token")):
            return JSONResponse({"error": "missing or wrong X-CSRF-Token"}, 403)
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"error": "body: expected a JSON object"}, 400)
        try:
            action, value = api_body(body)
        except ValueError as error:
            return JSONResponse({"error": str(error)}, 400)
        question = await run_in_threadpool(find, request)
        if question is None:
            return JSONResponse({"error": "no such question"}, 404)
        actions = batch_actions(question.envelope.question)
        if actions is not None:
            # Refused here, before the question is closed: the host would refuse it too.
            decisions = mapping(value).get("decisions")
            problem = decisions_problem(actions, decisions)
            if problem:
                return JSONResponse({"error": problem}, 400)
        by = identity(request) or "unknown"
        try:
            result = await run_in_threadpool(do_answer, question, action, value, by)
        except QuestionClosed as closed:
            return JSONResponse(
                {
                    "error": f"already {closed.question.describe_close()}",
                    "question": _question_json(closed.question),
                },
                409,
            )
        except (AgentWaitError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        except Exception as error:  # noqa: BLE001 - the entry point failed; reported, not traced
            logger.error(
                "answer to %s not sent: %s", question.envelope.question_id, type(error).__name__
            )
            return JSONResponse(
                {"error": f"not sent: the entry point failed ({type(error).__name__}); try again"},
                502,
            )
        return JSONResponse(_question_json(result.question))

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
        Route("/events", guarded(events)),
        Route("/healthz", health),
        Route("/api/openapi.json", openapi),
        Route("/api/questions", guarded(api_list, api=True)),
        Route("/api/questions/{question_id}", guarded(api_get, api=True)),
        Route(
            "/api/questions/{question_id}/answer", guarded(api_answer, api=True), methods=["POST"]
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
                max_age=12 * 3600,
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
    },
}


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
            return JSONResponse(
                {
                    "error": f"{name[:40]!r}: not a query parameter of this operation "
                    f"(expected one of {', '.join(sorted(known))})"
                },
                400,
            )
    return None
