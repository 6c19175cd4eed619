"""Undo what Strands kept of an answer whose resume raised.

Strands records a response on its interrupt when the resume starts (``_InterruptState.resume``)
and keeps it when the run then raises (a hook that cannot handle the answer fails with an
``EventLoopException``); the session manager saves it. The interrupt then reads as answered, so
the host would refuse the corrected answer as a duplicate, although plain Strands accepts it.
The same holds for a run stopped before its end.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from contextlib import contextmanager
from typing import Any

from strands import Agent
from strands.multiagent.base import MultiAgentBase


def interrupt_state(runner: Agent | MultiAgentBase) -> Any:
    """The runner's ``_interrupt_state`` (an Agent, a Swarm and a Graph all keep one).

    Strands 1.62 has no public accessor for it; its own session code reads it the same way.
    Any: Strands' private ``_InterruptState`` class.
    """
    state = getattr(runner, "_interrupt_state", None)
    if state is None:
        raise RuntimeError(
            "this strands version keeps no _interrupt_state; agent-wait-strands supports "
            "strands-agents>=1.62,<2"
        )
    return state


def clear_response(agent: Agent | MultiAgentBase, question_id: str) -> None:
    """Clear the response a failed resume left on ``question_id``'s interrupt, and save the agent.

    Nothing to do once the run moved past the question (its tool cycle ended). Nothing either
    for a Swarm or Graph: Strands ends a multi-agent run that raised as failed, and a resume
    given a corrected answer would not run the node again, so the answer is left recorded and
    the question reads as no longer pending.
    """
    if isinstance(agent, MultiAgentBase):
        return
    state = interrupt_state(agent)
    interrupt = state.interrupts.get(question_id) if state.activated else None
    if interrupt is None or interrupt.response is None:
        return
    interrupt.response = None
    # activate() on an active state changes nothing but its version, which is what makes the
    # session manager write the interrupt state again.
    state.activate()
    session_manager = agent._session_manager  # pyright: ignore[reportPrivateUsage]
    if session_manager is not None:
        session_manager.sync_agent(agent)


@contextmanager
def responses_cleared_on_failure(
    agent: Agent | MultiAgentBase, question_ids: Iterable[str]
) -> Generator[None]:
    """Around a resume: if the run raises, the responses it was given are cleared, then it re-raises.

    A run stopped before its end (a stream closed early, a cancelled task) is cleared the same
    way: Strands' clean-up saved the interrupt with its response, and the question would read
    as answered by a run that never finished.
    """
    try:
        yield
    except BaseException:
        for question_id in question_ids:
            clear_response(agent, question_id)
        raise
