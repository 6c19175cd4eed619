"""The JSON API: list and read questions, answer one, or answer several of a thread at once."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from agent_wait.core import AgentWaitError, NotAnApprover, log_safe
from agent_wait.host import (
    AlreadyVoted,
    QuestionClosed,
    QuestionDecided,
    QuestionNotFound,
    SendUnconfirmed,
)
from agent_wait.inbox._many import (
    Problem,
    Refused,
    answer_of_body,
    answer_problem,
    api_answers,
    check_all,
    label,
)
from agent_wait.inbox._openapi import MAX_LIMIT, OPENAPI
from agent_wait.inbox._query import Filters, Page, check_state
from agent_wait.inbox._web import PAGE_SIZE, Web, logger, question_json, unconfirmed

_T = TypeVar("_T")


def _limit(params: Mapping[str, str]) -> int:
    """The ``limit`` query parameter: 1 to ``MAX_LIMIT`` rows, ``PAGE_SIZE`` when absent."""
    text = params.get("limit")
    if text is None:
        return PAGE_SIZE
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= MAX_LIMIT:
        raise ValueError(f"limit: expected a whole number from 1 to {MAX_LIMIT}, got {text[:40]!r}")
    return int(text)


def _page_json(page: Page) -> dict[str, Any]:
    return {
        "questions": [question_json(q) for q in page.questions],
        "next_cursor": page.next_cursor,
    }


def _refused_json(refused: Refused) -> dict[str, Any]:
    """A refused set of answers: the first problem, its question, every problem, who closed."""
    first = refused.problems[0]
    body: dict[str, Any] = {
        "error": "; ".join(p.error for p in refused.problems) + "; nothing sent",
        "question_id": first.question_id,
        "problems": [{"question_id": p.question_id, "error": p.error} for p in refused.problems],
    }
    if refused.closed:
        body["question"] = question_json(refused.closed[0])
    return body


def _not_sent(error: Exception) -> Response:
    """The 502 for an answer the entry point failed to send (already logged): it can be retried."""
    return JSONResponse(
        {"error": f"not sent: the entry point failed ({type(error).__name__}); try again"}, 502
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


async def _json_body(request: Request) -> Any:
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


class _Api:
    def __init__(self, web: Web) -> None:
        self.web = web

    async def api_list(self, request: Request) -> Response:
        params = request.query_params
        if refused := _unknown_parameter(request, "/api/questions", "get"):
            return refused
        listing = self.web.listing
        try:
            # Exactly as the document lists it (the pages' forms send an empty one for "any").
            if (state := params.get("state")) is not None:
                check_state(state)
            filters = Filters.parse(params)
            status = params.get("status", "open")
            if status not in ("open", "closed"):
                raise ValueError(f"status: expected open or closed, got {status[:40]!r}")
            getter = listing.history_page if status == "closed" else listing.open_page
            page = await run_in_threadpool(getter, filters, params.get("after"), _limit(params))
        except ValueError as error:
            return JSONResponse({"error": str(error)}, 400)
        return JSONResponse(_page_json(await run_in_threadpool(self.web.visible, request, page)))

    async def api_get(self, request: Request) -> Response:
        if refused := _unknown_parameter(request, "/api/questions/{question_id}", "get"):
            return refused
        question = await run_in_threadpool(self.web.find, request)
        if question is None:
            return JSONResponse(
                {"error": "no such question (name the thread if several asked it)"}, 404
            )
        return JSONResponse(question_json(question))

    async def posted(
        self, request: Request, path: str, parse: Callable[[Any], _T]
    ) -> _T | Response:
        """A POST to the JSON API: its body as ``parse`` reads it, or the response refusing it.

        Refused: a query parameter ``path`` does not take, a session's missing or wrong CSRF
        header, or a body ``parse`` rejects (ValueError, whose message is the error).
        """
        if refused := _unknown_parameter(request, path, "post"):
            return refused
        if not self.web.csrf_ok(request, request.headers.get("x-csrf-token")):
            return JSONResponse({"error": "missing or wrong X-CSRF-Token"}, 403)
        try:
            return parse(await _json_body(request))
        except ValueError as error:
            return JSONResponse({"error": str(error)}, 400)

    async def api_answer(self, request: Request) -> Response:
        web = self.web
        value = await self.posted(request, "/api/questions/{question_id}/answer", answer_of_body)
        if isinstance(value, Response):
            return value
        question = await run_in_threadpool(web.find, request)
        if question is None:
            return JSONResponse({"error": "no such question"}, 404)
        try:
            # Refused here, before the question is closed: the host would refuse it too.
            problem = answer_problem(question, value)
        except AgentWaitError as error:
            return JSONResponse({"error": str(error)}, 400)
        if problem:
            return JSONResponse({"error": problem}, 400)
        by = web.identity(request)
        if by is None:
            return JSONResponse({"error": "not logged in"}, 401)
        try:
            result = await run_in_threadpool(web.answer_one, question, value, by)
        except NotAnApprover as refused:
            return JSONResponse({"error": str(refused)}, 403)
        except QuestionClosed as closed:
            voted = isinstance(closed, AlreadyVoted | QuestionDecided)
            return JSONResponse(
                {
                    "error": str(closed)
                    if voted
                    else f"already {closed.question.describe_close()}",
                    "question": question_json(closed.question),
                },
                409,
            )
        except SendUnconfirmed as error:
            return JSONResponse({"error": unconfirmed(error)}, 502)
        except (AgentWaitError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        except Exception as error:  # noqa: BLE001 - the entry point failed; reported, not traced
            logger.error(
                "answer to %s not sent: %s",
                log_safe(question.envelope.question_id),
                type(error).__name__,
            )
            return _not_sent(error)
        return JSONResponse(question_json(result.question))

    async def api_answers_of_thread(self, request: Request) -> Response:
        web = self.web
        answers = await self.posted(request, "/api/threads/{thread_id}/answers", api_answers)
        if isinstance(answers, Response):
            return answers
        thread_id = request.path_params["thread_id"]
        questions = await run_in_threadpool(web.listing.thread, thread_id)
        try:
            pairs = check_all(thread_id, questions, answers)
        except Refused as refused:
            return JSONResponse(_refused_json(refused), refused.status)
        except AgentWaitError as error:  # an answer_schema that cannot be checked
            return JSONResponse({"error": str(error)}, 400)
        by = web.identity(request)
        if by is None:
            return JSONResponse({"error": "not logged in"}, 401)
        try:
            result = await run_in_threadpool(web.answer_thread, thread_id, pairs, by)
        except NotAnApprover as refused:
            return JSONResponse({"error": str(refused)}, 403)
        except QuestionClosed as closed:
            lost = closed.question
            problem = Problem(
                lost.envelope.question_id, f"{label(lost)}: already {lost.describe_close()}"
            )
            return JSONResponse(_refused_json(Refused(409, [problem], [lost])), 409)
        except QuestionNotFound as error:  # removed from the store since it was read
            return JSONResponse({"error": str(error)}, 404)
        except SendUnconfirmed as error:
            return JSONResponse({"error": unconfirmed(error)}, 502)
        except (AgentWaitError, ValueError) as error:
            return JSONResponse({"error": str(error)}, 400)
        except Exception as error:  # noqa: BLE001 - the entry point failed; reported, not traced
            logger.error(
                "answers to thread %s not sent: %s", log_safe(thread_id), type(error).__name__
            )
            return _not_sent(error)
        return JSONResponse({"questions": [question_json(q) for q in result.questions]})


async def _openapi(request: Request) -> Response:
    return JSONResponse(OPENAPI)


def routes(web: Web) -> list[BaseRoute]:
    """``/api/...``: the operations :data:`OPENAPI` documents, and the document itself."""
    handlers = _Api(web)
    return [
        Route("/api/openapi.json", _openapi),
        Route("/api/questions", web.guarded(handlers.api_list, api=True)),
        Route("/api/questions/{question_id}", web.guarded(handlers.api_get, api=True)),
        Route(
            "/api/questions/{question_id}/answer",
            web.guarded(handlers.api_answer, api=True),
            methods=["POST"],
        ),
        # A thread id may hold "/": the answers endpoint is the path's last segment.
        Route(
            "/api/threads/{thread_id:thread}/answers",
            web.guarded(handlers.api_answers_of_thread, api=True),
            methods=["POST"],
        ),
    ]
