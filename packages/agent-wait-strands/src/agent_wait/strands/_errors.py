"""The errors agent-wait-strands raises, all of them in this one module."""

from __future__ import annotations

from strands.multiagent.base import MultiAgentResult, Status


class MultiAgentRunFailed(RuntimeError):
    """A Swarm or Graph resumed with answers ended neither completed nor parked again.

    Not an ``AgentWaitError``: the host reports a resume that raised as ``resume_failed`` only
    for errors outside ``AgentWaitError`` (its own errors it raises to the caller).

    ``handle_message`` reports it as ``resume_failed`` (``Handled.error``).

    Attributes:
        result: The run's ``MultiAgentResult`` (its ``status``, each node's result).
        question_ids: The questions the answers were for.
        pending: True when the answers were undone and the questions take another answer;
            False when Strands ended them (see the message).
    """

    def __init__(self, result: MultiAgentResult, question_ids: list[str], *, pending: bool) -> None:
        failed = [node for node, r in result.results.items() if r.status is not Status.COMPLETED]
        state = (
            "the node that asked had not consumed the answers: the state the run started from "
            "is restored"
            if pending
            else "no node holds the answered questions any more (the node moved past them, or "
            "a Swarm or Graph nested in a node and restored from the session was started over "
            "without them, as Strands keeps a nested run's interrupt state only in memory): "
            "they cannot be answered again; a start message runs the thread again"
        )
        super().__init__(
            f"the {type(result).__name__} ended {result.status.value} (nodes not completed: "
            f"{failed}); {state}"
        )
        self.result = result
        self.question_ids = question_ids
        self.pending = pending
