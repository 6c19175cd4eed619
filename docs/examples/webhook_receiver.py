"""A receiver for agent-wait webhooks: verify the signature, deduplicate, hand the question on.

Run it with ``AGENT_WAIT_WEBHOOK_SECRET=whsec_... uvicorn webhook_receiver:app``.
"""

import os

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from agent_wait.webhook import WebhookVerificationError, verify

SECRET = os.environ["AGENT_WAIT_WEBHOOK_SECRET"]
seen: set[tuple[str, str, str]] = set()  # in production: a table with a unique key
inbox: list[dict] = []  # in production: your approvals UI


async def agent_wait_hook(request: Request) -> Response:
    try:
        envelope = verify(await request.body(), request.headers, SECRET)
    except WebhookVerificationError as error:
        return JSONResponse({"error": str(error)}, status_code=400)
    # The same question is published more than once (fresh event_id, same question_id): dedupe on
    # type + thread_id + question_id from the signed body (question ids repeat across threads; the
    # X-Agent-Wait-Dedupe-Key header carries the same key but is not signed).
    key = (envelope["type"], envelope["thread_id"], envelope["question_id"])
    if key not in seen:
        seen.add(key)
        inbox.append(envelope)
    return Response(status_code=204)  # 2xx for duplicates too, or the sender retries


app = Starlette(routes=[Route("/hooks/agent-wait", agent_wait_hook, methods=["POST"])])
