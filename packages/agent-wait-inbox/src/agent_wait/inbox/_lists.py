"""The open questions' list (the inbox's home page) and the history of closed ones."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote, urlencode

from markupsafe import Markup
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from agent_wait.core import (
    Deadline,
    StoredQuestion,
    call_summary,
    describe_deadline,
    format_utc,
)
from agent_wait.host import describe_asker
from agent_wait.inbox._present import ago, asked_at, default_text
from agent_wait.inbox._query import Filters
from agent_wait.inbox._web import PAGE_SIZE, Web, root


def _escape(text: str) -> str:
    """``text`` escaped for HTML exactly as the templates escape it, as plain text.

    markupsafe's own ``escape`` makes a Markup object of each value, and a list page escapes
    several hundred.
    """
    return (
        text.replace("&", "&amp;")
        .replace("<", "&lt;")
        .replace(">", "&gt;")
        .replace('"', "&#34;")
        .replace("'", "&#39;")
    )


@dataclass(frozen=True, slots=True)
class ListRow:
    """One row of a list page: plain text and links, escaped by the template."""

    question_id: str
    thread: str
    link: str
    thread_link: str
    summary: str
    """The call in one line (:func:`~agent_wait.core.call_summary`)."""
    asker: str
    """Who asked, when the envelope says (:func:`~agent_wait.host.describe_asker`)."""
    asked: str
    """``12 min ago`` ("" when the event id holds no time)."""
    asked_exact: str
    deadline: Deadline
    deadline_html: Markup
    default: str
    actions: str
    """The actions a key press may send, space-separated: the question's own, for a plain
    open call."""
    tags: list[tuple[str, str]]
    """``(key: value, link to the list filtered by that tag)``."""
    refusal: str | None
    """Why the agent refused the last answer (the question opened again), if it did."""
    votes: str | None
    """Where the votes stand on a question with a quorum ("1 of 2 approvals, ...")."""
    question: StoredQuestion


def _path_part(text: str) -> str:
    """``text`` quoted for a URL path; ids of letters and digits (most) as they are."""
    return text if text.isascii() and text.isalnum() else quote(text, safe="")


def deadline_html(d: Deadline) -> Markup:
    """A deadline as a page shows it: ``in 3 h (14:00 UTC)``, the exact UTC time on hover.

    The page's script turns the time into the reader's own. Built here rather than in a
    template: a list page has fifty, each a dozen escapes there.
    """
    if not d.exact:
        return Markup("no deadline")
    exact = _escape(d.exact)
    local = f'<span class="local" title="{exact}" data-utc="{exact}">{_escape(d.at)}</span>'
    if d.overdue:
        return Markup(
            f'<span class="overdue-text">{_escape(d.relative)}</span> ({local})'
            ' <strong class="badge">overdue</strong>'
        )
    return Markup(f"{_escape(d.relative)} ({local})")


def list_rows(questions: list[StoredQuestion], root: str, now: datetime) -> list[ListRow]:
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

    rows: list[ListRow] = []
    for question in questions:
        e = question.envelope
        thread = q(e.thread_id)
        asked = asked_at(e)
        deadline = describe_deadline(e.expires_at, now)
        # A batch of actions takes one decision each: keys do not answer it from the list.
        body: Any = e.question
        batch = isinstance(body, dict) and "actions" in body
        plain = question.is_open and bool(e.allowed_actions) and not batch
        rows.append(
            ListRow(
                question_id=e.question_id,
                thread=e.thread_id,
                link=f"{root}/questions/{_path_part(e.question_id)}?thread={thread}",
                thread_link=f"{root}/?thread={thread}",
                summary=call_summary(e),
                asker=describe_asker(e),
                asked=ago(asked, now),
                asked_exact=format_utc(asked) if asked else "",
                deadline=deadline,
                deadline_html=deadline_html(deadline),
                default=default_text(e.default),
                actions=" ".join(e.allowed_actions) if plain else "",
                tags=[(f"{k}: {v}", f"{root}/?tag={q(f'{k}:{v}')}") for k, v in e.tags.items()],
                refusal=question.describe_refusal(),
                votes=question.describe_votes(),
                question=question,
            )
        )
    return rows


def rows_html(rows: list[ListRow]) -> Markup:
    """The open questions' table rows, as ``list.html`` once rendered them in its loop.

    Built here, escaped as plain text (:func:`_escape`): fifty rows of a dozen escaped values each cost the page more through the template engine
    than the store query that read them.
    """
    if not rows:
        return Markup('<tr><td colspan="5">No open questions.</td></tr>')
    parts: list[str] = []
    for r in rows:
        thread = _escape(r.thread)
        extra = (f' <span class="votes">{_escape(r.votes)}</span>' if r.votes else "") + (
            f' <span class="error refused">{_escape(r.refusal)}</span>' if r.refusal else ""
        )
        asked = (
            f'<span title="{_escape(r.asked_exact)}">{_escape(r.asked)}</span>' if r.asked else ""
        )
        tags = "".join(
            f'<a class="tag" href="{_escape(link)}">{_escape(t)}</a> ' for t, link in r.tags
        )
        parts.append(
            f'<tr class="row{" overdue" if r.deadline.overdue else ""}" '
            f'data-question="{_escape(r.question_id)}" data-thread="{thread}" '
            f'data-actions="{_escape(r.actions)}">\n'
            f'  <td class="call"><a class="summary" href="{_escape(r.link)}">{_escape(r.summary)}</a>'
            f"{extra}\n"
            f'    <span class="asker">thread <a href="{_escape(r.thread_link)}">{thread}</a>'
            f"{f' · {_escape(r.asker)}' if r.asker else ''}</span></td>\n"
            f'  <td data-label="Asked">{asked}</td>\n'
            f'  <td data-label="Deadline">{r.deadline_html}</td>\n'
            f'  <td data-label="Default">{_escape(r.default)}</td>\n'
            f'  <td data-label="Tags">{tags}</td>\n'
            "</tr>\n"
        )
    return Markup("".join(parts))


class _Lists:
    def __init__(self, web: Web) -> None:
        self.web = web

    def list_page(self, request: Request) -> Response:
        web, listing = self.web, self.web.listing
        try:
            filters = Filters.parse(request.query_params)
            # The marker is read before the page, so a change that lands while it renders
            # still reaches it live.
            marker = listing.change_marker()
            page = web.visible(
                request, listing.open_page(filters, request.query_params.get("after"), PAGE_SIZE)
            )
        except ValueError as error:
            return web.render(
                request,
                "list.html",
                400,
                error=str(error),
                rows_html=rows_html([]),
                filters=Filters(),
                next_link=None,
                marker=listing.change_marker(),
            )
        next_link = (
            f"{root(request)}/?" + urlencode({**filters.query(), "after": page.next_cursor})
            if page.next_cursor
            else None
        )
        return web.render(
            request,
            "list.html",
            rows_html=rows_html(list_rows(page.questions, root(request), datetime.now(UTC))),
            filters=filters,
            next_link=next_link,
            marker=marker,
        )

    async def index(self, request: Request) -> Response:
        # Query and render in one worker thread: one hop off the event loop per page.
        return await run_in_threadpool(self.list_page, request)

    async def history(self, request: Request) -> Response:
        web, listing = self.web, self.web.listing
        try:
            filters = Filters.parse(request.query_params)
            page = web.visible(
                request,
                await run_in_threadpool(
                    listing.history_page, filters, request.query_params.get("after"), PAGE_SIZE
                ),
            )
        except ValueError as error:
            return web.render(
                request,
                "history.html",
                400,
                error=str(error),
                rows=[],
                filters=Filters(),
                next_link=None,
                has_history=listing.has_history,
            )
        next_link = (
            f"{root(request)}/history?" + urlencode({**filters.query(), "after": page.next_cursor})
            if page.next_cursor
            else None
        )
        return web.render(
            request,
            "history.html",
            rows=list_rows(page.questions, root(request), datetime.now(UTC)),
            filters=filters,
            next_link=next_link,
            has_history=listing.has_history,
        )


def routes(web: Web) -> list[BaseRoute]:
    """``/`` (open questions, earliest deadline first) and ``/history``."""
    handlers = _Lists(web)
    return [
        Route("/", web.guarded(handlers.index)),
        Route("/history", web.guarded(handlers.history)),
    ]
