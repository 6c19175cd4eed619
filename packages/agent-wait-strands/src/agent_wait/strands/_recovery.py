"""Undo what Strands kept of an answer whose resume raised.

Strands records a response on its interrupt when the resume starts (``_InterruptState.resume``)
and keeps it when the run then raises (a hook that cannot handle the answer fails with an
``EventLoopException``); the session manager saves it. The interrupt then reads as answered, so
the host would refuse the corrected answer as a duplicate, although plain Strands accepts it.
The same holds for a run stopped before its end.

A Swarm or Graph does not raise when a node fails: it ends the run ``FAILED`` (a Swarm catches
its node's exception; a Graph ends so when a Swarm or Graph nested in a node failed) and saves
that, with the answered questions no longer pending. :func:`responses_cleared_on_failure` turns
such a result after answers into :class:`MultiAgentRunFailed`, first restoring the saved state
the run started from when the node that asked still holds the answer unconsumed.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Generator, Iterable, Mapping
from contextlib import contextmanager
from typing import Any

from agent_wait.strands import _compat
from agent_wait.strands._errors import MultiAgentRunFailed
from strands import Agent
from strands.agent.agent_result import AgentResult
from strands.multiagent.base import MultiAgentBase, MultiAgentResult, Status

logger = logging.getLogger(__name__)

_ENDED = (Status.COMPLETED, Status.INTERRUPTED)
"""The statuses of a multi-agent run that took its answers: it finished, or parked again."""


def interrupt_state(runner: Agent | MultiAgentBase) -> Any:
    """The runner's ``_interrupt_state`` (an Agent, a Swarm and a Graph all keep one).

    Strands has no public accessor for it (see ``_compat``). Any: Strands' private
    ``_InterruptState`` class.
    """
    state = _compat.interrupt_state(runner)
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
    session_manager = _compat.session_manager(agent)
    if session_manager is not None:
        session_manager.sync_agent(agent)


RunResult = AgentResult | MultiAgentResult


@contextmanager
def responses_cleared_on_failure(
    agent: Agent | MultiAgentBase, question_ids: Iterable[str]
) -> Generator[Callable[[RunResult], RunResult]]:
    """Around a resume: if the run raises, the responses it was given are cleared, then it re-raises.

    A run stopped before its end (a stream closed early, a cancelled task) is cleared the same
    way: Strands' clean-up saved the interrupt with its response, and the question would read
    as answered by a run that never finished.

    Yields:
        The check of the run's result: a Swarm's or Graph's result that is neither completed
        nor interrupted raises :class:`MultiAgentRunFailed` (for a start, nothing to check).
    """
    ids = list(question_ids)
    # The state the run starts from: what a failed run that did not consume its answers goes
    # back to (Strands saves it again at the end of every run).
    snapshot = agent.serialize_state() if isinstance(agent, MultiAgentBase) and ids else None

    def checked(result: RunResult) -> RunResult:
        if snapshot is None or not isinstance(result, MultiAgentResult) or result.status in _ENDED:
            return result
        assert isinstance(agent, MultiAgentBase)
        pending = all(_held(agent, i) for i in ids)
        if pending:
            _restore(agent, snapshot)
        logger.warning(
            "agent-wait strands: the %s resumed with the answers to %s ended %s; %s",
            type(agent).__name__,
            ids,
            result.status.value,
            "restored, the questions take another answer" if pending else "the questions are lost",
        )
        raise MultiAgentRunFailed(result, ids, pending=pending)

    try:
        yield checked
    except MultiAgentRunFailed:
        raise
    except BaseException:
        for question_id in ids:
            clear_response(agent, question_id)
        raise


def _held(runner: MultiAgentBase, question_id: str) -> bool:
    """Whether a node agent (in a nested run too) still holds the question, answered, unconsumed.

    A node agent keeps its interrupts, responses set, until it moves past them; a run that
    failed on the answer leaves them so.
    """
    nodes: Mapping[str, Any] = getattr(runner, "nodes", {})
    for node in nodes.values():
        executor = getattr(node, "executor", None)
        if isinstance(executor, MultiAgentBase):
            if _held(executor, question_id):
                return True
        elif isinstance(executor, Agent):
            state = interrupt_state(executor)
            interrupt = state.interrupts.get(question_id) if state.activated else None
            if interrupt is not None and interrupt.response is not None:
                return True
    return False


def _restore(runner: MultiAgentBase, snapshot: dict[str, Any]) -> None:
    runner.deserialize_state(snapshot)
    session_manager = getattr(runner, "session_manager", None)
    if session_manager is not None:
        session_manager.sync_multi_agent(runner)
