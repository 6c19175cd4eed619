"""Who asked a question, in words, for the command line and the inbox."""

from __future__ import annotations

from agent_wait.core import WaitEnvelope

FRAMEWORKS = {
    "langgraph": "LangGraph",
    "pydantic_ai": "Pydantic AI",
    "strands": "Strands",
    "openai_agents": "OpenAI Agents",
    "google_adk": "Google ADK",
}
"""The framework names hosts record in ``context.framework``, as people write them."""


def describe_asker(envelope: WaitEnvelope) -> str:
    """Who asked, as far as the envelope tells.

    ``agent refunds (Strands) · tool issue_refund · started by alice``: the agent's name and
    its framework, the graph node or tool of the call, and who started the run, each when known.
    """
    parts: list[str] = []
    context = envelope.context
    if context is not None:
        framework = FRAMEWORKS.get(context.framework or "", context.framework)
        if context.agent:
            parts.append(f"agent {context.agent}" + (f" ({framework})" if framework else ""))
        elif framework:
            parts.append(framework)
        if context.node and context.node != context.agent:
            parts.append(f"node {context.node}")
        if context.tool:
            parts.append(f"tool {context.tool}")
    if envelope.started_by:
        parts.append(f"started by {envelope.started_by}")
    return " · ".join(parts)
