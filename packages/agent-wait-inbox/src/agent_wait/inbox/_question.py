"""A question's page, and its answer form posted without JavaScript."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from urllib.parse import urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from agent_wait.core import (
    AgentWaitError,
    AuditEntry,
    NotAnApprover,
    StoredQuestion,
    audit_log_of,
    call_summary,
    describe_deadline,
    format_utc,
    log_safe,
    verify,
)
from agent_wait.host import (
    FRAMEWORKS,
    AlreadyVoted,
    QuestionClosed,
    QuestionDecided,
    SendUnconfirmed,
    may_answer,
)
from agent_wait.inbox._batch import batch_actions, mapping
from agent_wait.inbox._lists import deadline_html
from agent_wait.inbox._many import DECISIONS, WHOLE, answer_problem, form_answer
from agent_wait.inbox._present import ago, asked_at, default_text
from agent_wait.inbox._schema_form import (
    PREFIX,
    SCHEMA,
    problem_field,
    schema_answer,
    schema_fields,
)
from agent_wait.inbox._web import Web, form_fields, logger, root, unconfirmed


class _Question:
    def __init__(self, web: Web) -> None:
        self.web = web

    async def detail(
        self,
        request: Request,
        message: str | None = None,
        status: int = 200,
        whole: tuple[str, str] | None = None,
        kept: Mapping[str, str] | None = None,
    ) -> Response:
        """The question's page, with what a refused form held, shown again.

        ``whole`` is the (text, kind) of a refused whole answer; ``kept`` the fields of a
        refused schema form, its problem shown beside the field it names.
        """
        web, listing = self.web, self.web.listing
        marker = await run_in_threadpool(listing.change_marker)
        question = await run_in_threadpool(web.find, request)
        if question is None:
            return web.render(request, "missing.html", 404)
        envelope = question.envelope
        earlier = [
            q
            for q in await run_in_threadpool(listing.thread, envelope.thread_id)
            if q.envelope.question_id != envelope.question_id
        ]
        body = mapping(envelope.question)
        who = web.identity(request)
        refusal = (
            await run_in_threadpool(may_answer, question, who, web.approvers)
            if who is not None and question.is_open
            else None
        )
        audit, audit_problems = await run_in_threadpool(self.audit_of, question)
        now = datetime.now(UTC)
        asked = asked_at(envelope)
        return web.render(
            request,
            "detail.html",
            status,
            refusal=refusal,
            q=question,
            e=envelope,
            audit=audit,
            audit_problems=audit_problems,
            body=body,
            summary=call_summary(envelope),
            asked=ago(asked, now),
            asked_exact=format_utc(asked) if asked else "",
            due=deadline_html(describe_deadline(envelope.expires_at, now)),
            default=default_text(envelope.default),
            c=envelope.context,
            frameworks=FRAMEWORKS,
            schema_form=schema_fields(envelope.answer_schema),
            schema_kept=kept if kept is not None else {},
            schema_problem_at=problem_field(message.removeprefix("Not sent: "))
            if kept is not None and message
            else None,
            actions=batch_actions(envelope.question),
            earlier=earlier,
            message=message,
            marker=marker,
            whole=whole[0] if whole else "",
            whole_as=whole[1] if whole else ("json" if envelope.answer_schema else "text"),
        )

    def audit_of(self, question: StoredQuestion) -> tuple[list[AuditEntry], list[str]]:
        """The question's audit record beside the store, and what does not verify in it."""
        log = audit_log_of(self.web.store)
        if log is None:
            return [], []
        envelope = question.envelope
        entries = log.entries(envelope.question_id, envelope.thread_id)
        return entries, verify(entries)

    async def show(self, request: Request) -> Response:
        return await self.detail(request)

    async def answer_form(self, request: Request) -> Response:
        web = self.web
        fields = form_fields(await request.form())
        if not web.csrf_ok(request, fields.get("csrf")):
            return PlainTextResponse("the form expired; reload the page and answer again", 403)
        question = await run_in_threadpool(web.find, request)
        if question is None:
            return web.render(request, "missing.html", 404)
        whole: tuple[str, str] | None = None
        kept: Mapping[str, str] | None = None
        schema = question.envelope.answer_schema
        if fields.get("send") == SCHEMA and schema is not None:
            kept = {k: v for k, v in fields.items() if k.startswith(PREFIX)}
            choice = SCHEMA
        elif fields.get("send") == WHOLE:
            whole = (fields.get("whole", ""), fields.get("whole_as", "text"))
            choice = WHOLE
        elif batch_actions(question.envelope.question) is not None:
            choice = DECISIONS
        else:
            choice = fields.get("action", "")
        try:
            value = (
                schema_answer(schema, fields)
                if choice == SCHEMA and schema is not None
                else form_answer(question, fields, choice)
            )
            # Not allowed or not matching the answer schema: said, not sent.
            problem = answer_problem(question, value)
            if problem:
                raise ValueError(problem)
        except (AgentWaitError, ValueError) as error:
            return await self.detail(request, f"Not sent: {error}", 400, whole, kept)
        by = web.identity(request)
        if by is None:
            return PlainTextResponse("not signed in", 401)
        try:
            result = await run_in_threadpool(web.answer_one, question, value, by)
        except NotAnApprover as refused:
            return await self.detail(request, f"Not sent: {refused.reason}.", 403)
        except (AlreadyVoted, QuestionDecided) as refused:
            return await self.detail(request, f"Not recorded: {refused}", 409)
        except QuestionClosed as closed:
            return await self.detail(
                request, f"Not sent: already {closed.question.describe_close()}.", 409
            )
        except SendUnconfirmed as error:
            return await self.detail(request, f"{unconfirmed(error)}.", 502)
        except (AgentWaitError, ValueError) as error:
            # No longer found, or refused by core's own checks: said, not sent.
            return await self.detail(request, f"Not sent: {error}", 400, whole)
        except Exception as error:  # noqa: BLE001 - the entry point failed; shown, not traced
            logger.error(
                "answer to %s not sent: %s",
                log_safe(question.envelope.question_id),
                type(error).__name__,
            )
            return await self.detail(
                request,
                f"Not sent: the entry point failed ({type(error).__name__}); try again.",
                502,
            )
        return RedirectResponse(
            f"{root(request)}/questions/{request.path_params['question_id']}?"
            + urlencode(
                {
                    "thread": question.envelope.thread_id,
                    ("voted" if result.message is None else "sent"): "1",
                }
            ),
            303,
        )


def routes(web: Web) -> list[BaseRoute]:
    """``/questions/<id>`` and the form it posts to, ``/questions/<id>/answer``."""
    handlers = _Question(web)
    return [
        Route("/questions/{question_id}", web.guarded(handlers.show)),
        Route(
            "/questions/{question_id}/answer",
            web.guarded(handlers.answer_form),
            methods=["POST"],
        ),
    ]
