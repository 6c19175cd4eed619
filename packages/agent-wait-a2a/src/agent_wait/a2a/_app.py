"""The ASGI app that serves a :class:`WaitExecutor` over A2A's JSON-RPC binding."""

from __future__ import annotations

from collections.abc import Mapping

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskStore
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill
from a2a.utils.constants import PROTOCOL_VERSION_CURRENT, TransportProtocol
from starlette.applications import Starlette

from agent_wait.a2a._server import HandleMessage, WaitExecutor


def agent_card(name: str, url: str, *, description: str = "", version: str = "0.1.0") -> AgentCard:
    """A card for an agent-wait host served at ``url`` (JSON-RPC, streaming)."""
    if not url.startswith(("http://", "https://")):
        raise ValueError(f"url: expected the server's http(s) address, got {url!r}")
    return AgentCard(
        name=name,
        description=description or f"{name}: an agent that may wait for a person's answer",
        version=version,
        supported_interfaces=[
            AgentInterface(
                protocol_binding=TransportProtocol.JSONRPC.value,
                protocol_version=PROTOCOL_VERSION_CURRENT,
                url=url,
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/json"],
        skills=[
            AgentSkill(
                id="run",
                name=name,
                description="Runs the agent; it may ask a question (input-required) first",
                tags=["human-in-the-loop"],
            )
        ],
    )


def a2a_app(
    handle: HandleMessage,
    card: AgentCard,
    *,
    answered_by: str = "a2a",
    tokens: Mapping[str, str] | None = None,
    task_store: TaskStore | None = None,
) -> Starlette:
    """An ASGI app serving ``handle`` as an A2A agent: the card and JSON-RPC at ``/``.

    Args:
        handle: Runs or resumes a thread (see :data:`HandleMessage`).
        card: The agent card (see :func:`agent_card`).
        answered_by: Who answers when the request names nobody.
        tokens: Bearer tokens and the person each stands for (see :class:`WaitExecutor`).
        task_store: Where tasks are kept (default: in memory, lost on restart; the SDK's
            ``DatabaseTaskStore`` keeps them).
    """
    handler = DefaultRequestHandler(
        agent_executor=WaitExecutor(handle, answered_by=answered_by, tokens=tokens),
        task_store=task_store or InMemoryTaskStore(),
        agent_card=card,
    )
    routes = [*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")]
    return Starlette(routes=routes)
