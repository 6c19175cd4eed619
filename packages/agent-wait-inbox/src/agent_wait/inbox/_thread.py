"""A thread's page: its questions, the open ones answered together in one message."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from agent_wait.core import AgentWaitError, NotAnApprover, StoredQuestion, log_safe
from agent_wait.host import QuestionClosed, SendUnconfirmed
from agent_wait.inbox._batch import batch_actions, mapping
from agent_wait.inbox._many import (
    ACTION,
    DECISIONS,
    WHOLE,
    Problem,
    Refused,
    check_all,
    form_answer,
    label,
)
from agent_wait.inbox._web import Web, form_fields, logger, overdue, root, unconfirmed


def _form_indexes(fields: Mapping[str, str]) -> list[int]:
    """The questions of a thread form, by the index of their ``q.<i>.id`` fields, in order."""
    found: list[int] = []
    for key in fields:
        index, dot, rest = key.removeprefix("q.").partition(".")
        if key.startswith("q.") and dot and rest == "id" and index.isascii() and index.isdigit():
            found.append(int(index))
    return sorted(found)


class _Thread:
    def __init__(self, web: Web) -> None:
        self.web = web

    async def thread_page(
        self,
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
        web, listing = self.web, self.web.listing
        thread_id = request.path_params["thread_id"]
        marker = await run_in_threadpool(listing.change_marker)
        questions = await run_in_threadpool(listing.thread, thread_id)
        if not questions:
            return web.render(request, "missing.html", 404)
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
        return web.render(
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
            overdue=overdue,
            marker=marker,
        )

    async def show_thread(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.thread_form(request)
        return await self.thread_page(request)

    def outcomes_of(
        self, thread_id: str, question_ids: list[str]
    ) -> list[tuple[StoredQuestion, str]]:
        """What became of each question after nothing was sent: still open, or closed by whom."""
        now = {q.envelope.question_id: q for q in self.web.listing.thread(thread_id)}
        return [
            (
                now[i],
                "not sent; still open" if now[i].is_open else f"already {now[i].describe_close()}",
            )
            for i in question_ids
            if i in now
        ]

    async def thread_form(self, request: Request) -> Response:
        web = self.web
        fields = form_fields(await request.form())
        if not web.csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page and answer again", 403)
        thread_id = request.path_params["thread_id"]
        questions = await run_in_threadpool(web.listing.thread, thread_id)
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
            return await self.thread_page(request, message, 400, kept=kept)
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
            return await self._refused(request, refused, kept, [i for i, _ in chosen])
        except AgentWaitError as error:  # an answer_schema that cannot be checked
            return await self.thread_page(request, f"Not sent: {error}", 400, kept=kept)
        by = web.identity(request)
        if by is None:
            return PlainTextResponse("not signed in", 401)
        try:
            result = await run_in_threadpool(web.answer_thread, thread_id, pairs, by)
        except NotAnApprover as refused_person:
            return await self.thread_page(request, f"Not sent: {refused_person}.", 403, kept=kept)
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
            return await self._refused(request, refused, kept, [i for i, _ in chosen])
        except SendUnconfirmed as error:
            return await self.thread_page(request, f"{unconfirmed(error)}.", 502)
        except (AgentWaitError, ValueError) as error:
            return await self.thread_page(request, f"Not sent: {error}", 400, kept=kept)
        except Exception as error:  # noqa: BLE001 - the entry point failed; shown, not traced
            logger.error(
                "answers to thread %s not sent: %s", log_safe(thread_id), type(error).__name__
            )
            return await self.thread_page(
                request,
                f"Not sent: the entry point failed ({type(error).__name__}); try again.",
                502,
                kept=kept,
            )
        sent = [("sent", q.envelope.question_id) for q in result.questions]
        return RedirectResponse(
            f"{root(request)}/threads/{quote(thread_id)}?{urlencode(sent)}", 303
        )

    async def _refused(
        self,
        request: Request,
        refused: Refused,
        kept: Mapping[str, Mapping[str, str]],
        ids: list[str],
    ) -> Response:
        thread_id = request.path_params["thread_id"]
        outcomes = (
            await run_in_threadpool(self.outcomes_of, thread_id, ids)
            if refused.status == 409
            else None
        )
        return await self.thread_page(
            request,
            "Nothing sent: " + "; ".join(p.error for p in refused.problems) + ".",
            refused.status,
            problems={p.question_id: p.error for p in refused.problems},
            kept=kept,
            outcomes=outcomes,
        )


def routes(web: Web) -> list[BaseRoute]:
    """``/threads/<thread id>``: the page, and the form it posts to itself."""
    handlers = _Thread(web)
    return [
        Route(
            "/threads/{thread_id:thread}",
            web.guarded(handlers.show_thread),
            methods=["GET", "POST"],
        ),
    ]
