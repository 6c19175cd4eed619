"""The links app: the confirmation page a link opens (GET) and the answer its button sends (POST)."""

from __future__ import annotations

import logging
import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import Route

from agent_wait.core import AgentWaitError, EntryPoint, Identity, QuestionStore, StoredQuestion
from agent_wait.email._errors import TokenRefused
from agent_wait.email._summary import call_of
from agent_wait.email._tokens import LinkSigner, LinkToken, UsedTokens
from agent_wait.host import QuestionClosed, QuestionNotFound, answer, default_store

logger = logging.getLogger(__name__)

_TEMPLATES = Path(__file__).parent / "templates"
# Pages that hold a token: never cached, never sent on as a Referer, never framed.
_HEADERS = {
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
    "X-Frame-Options": "DENY",
    "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
}
_MAX_TOKEN = 4096


def default_tokens_path() -> Path:
    """``$AGENT_WAIT_HOME/email-links.sqlite3``, else in agent-wait's user data directory."""
    home = os.environ.get("AGENT_WAIT_HOME")
    if home:
        return Path(home).expanduser() / "email-links.sqlite3"
    from platformdirs import user_data_path

    return user_data_path("agent-wait") / "email-links.sqlite3"


def links_app(
    secret: str,
    store: QuestionStore | None = None,
    *,
    entry: EntryPoint | None = None,
    tokens_path: str | Path | None = None,
) -> Starlette:
    """The ASGI app the email links open: serve it with uvicorn (``agent-wait email serve``).

    ``GET /answer?token=...`` checks the token and shows the question with a confirmation
    button; it never answers, since mail scanners and link previews fetch every link. The
    button POSTs the token to ``/answer``, which marks the link used (a second use is refused,
    in this process or another sharing ``tokens_path``) and answers through
    :func:`agent_wait.host.answer` with the link's action, recording the recipient as who
    answered. A forged, altered or expired token is refused with a page saying so.

    Args:
        secret: The HMAC key the announcer signs links with.
        store: The question store (default: the inbox of the configured sqlite announcer).
        entry: Where answers are sent (default: as :func:`agent_wait.host.answer` chooses).
        tokens_path: The sqlite file recording used links (default:
            ``$AGENT_WAIT_HOME/email-links.sqlite3``).
    """
    signer = LinkSigner(secret)
    questions = store if store is not None else default_store()
    used = UsedTokens(Path(tokens_path) if tokens_path is not None else default_tokens_path())
    templates = Environment(
        loader=FileSystemLoader(_TEMPLATES),
        autoescape=select_autoescape(default=True, default_for_string=True),
        auto_reload=False,
    )

    def page(heading: str, status: int = 200, **context: Any) -> HTMLResponse:
        html = templates.get_template("page.html").render(heading=heading, **context)
        return HTMLResponse(html, status, headers=_HEADERS)

    def refused(error: TokenRefused) -> HTMLResponse:
        status = {"invalid": 403, "expired": 410, "used": 409}.get(error.reason, 403)
        return page("This link does not answer", status, message=str(error))

    def shown(question: StoredQuestion) -> dict[str, Any]:
        _, arguments = call_of(question.envelope)
        return {
            "arguments": arguments,
            "deadline": question.envelope.expires_at or "none",
            "thread": question.envelope.thread_id,
        }

    def lookup(link: LinkToken) -> StoredQuestion | None:
        found = questions.find(link.question_id, link.thread_id)
        return found[0] if found else None

    async def token_of(request: Request) -> str:
        if request.method == "POST":
            form = await request.form()
            value = form.get("token")
        else:
            value = request.query_params.get("token")
        if not isinstance(value, str) or not value or len(value) > _MAX_TOKEN:
            raise TokenRefused("invalid", "this link is not valid (it has no token)")
        return value

    async def show(request: Request) -> Response:
        try:
            token = await token_of(request)
            link = signer.verify(token)
        except TokenRefused as error:
            return refused(error)
        question = await run_in_threadpool(lookup, link)
        if question is None:
            return page("Question not found", 404, message="The agent no longer has this question.")
        if not question.is_open:
            return page(
                "Already closed",
                409,
                message=f"This question is already {question.describe_close()}.",
                question=shown(question),
            )
        return page(
            f"Answer: {link.action}?",
            question=shown(question),
            confirm={"token": token, "action": link.action, "recipient": link.recipient},
        )

    async def confirm(request: Request) -> Response:
        try:
            link = signer.verify(await token_of(request))
        except TokenRefused as error:
            return refused(error)
        if not await run_in_threadpool(used.claim, link):
            return refused(TokenRefused("used", "this link was already used"))
        try:
            result = await run_in_threadpool(
                lambda: answer(
                    link.question_id,
                    link.action,
                    identity=Identity(subject=link.recipient, source="email-link"),
                    thread_id=link.thread_id,
                    store=questions,
                    entry=entry,
                )
            )
        except QuestionClosed as error:
            return page("Already closed", 409, message=str(error))
        except QuestionNotFound:
            return page("Question not found", 404, message="The agent no longer has this question.")
        except (AgentWaitError, ValueError) as error:
            return page("Not answered", 409, message=str(error))
        except Exception as error:  # noqa: BLE001 - the send failed: the link may be used again
            await run_in_threadpool(used.release, link)
            logger.error("email link answer not sent: %s", type(error).__name__)
            return page(
                "Not sent",
                502,
                message="The answer could not be sent to the agent; try the link again.",
            )
        closed = result.question
        return page(
            "Answer recorded",
            message=f"{link.action} by {link.recipient} at {closed.answered_at}.",
        )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        yield
        used.close()

    async def health(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route("/answer", show, methods=["GET"]),
            Route("/answer", confirm, methods=["POST"]),
            Route("/healthz", health),
        ],
        lifespan=lifespan,
    )
