"""Undo what Strands kept of an answer whose resume raised.

Strands records a response on its interrupt when the resume starts (``_InterruptState.resume``)
and keeps it when the run then raises (a hook that cannot handle the answer fails with an
``EventLoopException``); the session manager saves it. The interrupt then reads as answered, so
the host would refuse the corrected answer as a duplicate, although plain Strands accepts it.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable
from contextlib import contextmanager

from strands import Agent


def clear_response(agent: Agent, question_id: str) -> None:
    """Clear the response a failed resume left on ``question_id``'s interrupt, and save the agent.

    Nothing to do once the run moved past the question (its tool cycle ended).
    """
    # Strands 1.62 has no public accessor for the interrupt state (see _host._parked).
    state = agent._interrupt_state  # pyright: ignore[reportPrivateUsage]
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
def responses_cleared_on_failure(agent: Agent, question_ids: Iterable[str]) -> Generator[None]:
    """Around a resume: if the run raises, the responses it was given are cleared, then it re-raises."""
    try:
        yield
    except Exception:
        for question_id in question_ids:
            clear_response(agent, question_id)
        raise
