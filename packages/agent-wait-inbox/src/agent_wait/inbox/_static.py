"""The pages' stylesheet, script and icon, served from the package."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import FileResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from agent_wait.inbox._web import HERE


async def _favicon(request: Request) -> Response:
    # Browsers ask for /favicon.ico before (or without) reading the page's icon link.
    return FileResponse(HERE / "static" / "favicon.svg", media_type="image/svg+xml")


def routes() -> list[BaseRoute]:
    """``/static/...`` (the package's ``static`` folder) and ``/favicon.ico``."""
    return [
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
        Route("/favicon.ico", _favicon),
    ]
