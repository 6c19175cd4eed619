"""Live updates: a server-sent event whenever the store changes; and the health check."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response, StreamingResponse
from starlette.routing import BaseRoute, Route

from agent_wait.inbox._web import Web


class _Live:
    def __init__(self, web: Web) -> None:
        self.web = web

    async def events(self, request: Request) -> Response:
        listing, poll_interval = self.web.listing, self.web.poll_interval

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


async def _health(request: Request) -> Response:
    return PlainTextResponse("ok")


def routes(web: Web) -> list[BaseRoute]:
    """``/events`` (the pages' live updates) and ``/healthz``."""
    return [
        Route("/events", web.guarded(_Live(web).events)),
        Route("/healthz", _health),
    ]
