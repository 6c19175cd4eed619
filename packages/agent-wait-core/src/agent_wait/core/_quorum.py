"""M-of-N approval: a question that stays open until enough distinct people approve it.

A question asked with ``WaitPolicy(quorum=2)`` takes *votes*: each ``approve`` or ``reject``
answer is recorded on the question (a compare-and-set on the number of votes already there),
and only the vote that reaches the quorum closes the question and sends one answer message.

How votes combine:

- ``approve`` votes count per distinct person; ``quorum.approve`` of them decide ``approve``.
- ``reject`` votes count per distinct person; ``quorum.reject`` of them (1 by default: any
  reject is a veto) decide ``reject``.
- Edits must agree. An approval's edit is its ``args`` (None: the call as proposed). An
  approval whose edit differs from the approvals before it restarts the count: those earlier
  approvals are *superseded*, shown as such, and their people may approve the new arguments.
  The answer sent is the deciding approval's, so the call runs with the arguments every
  counted approver approved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, Field

APPROVE = "approve"
REJECT = "reject"
VOTE_ACTIONS = (APPROVE, REJECT)


class Quorum(BaseModel):
    """How many distinct people decide a question.

    ``approve`` approvals of the same arguments approve it; ``reject`` rejections (1, the
    default: any reject is a veto) reject it. ``WaitPolicy(quorum=2)`` is ``Quorum(approve=2)``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    approve: int = Field(ge=1, description="Distinct approvals that approve the call.")
    reject: int = Field(
        default=1, ge=1, description="Distinct rejections that reject it; 1: any reject vetoes."
    )

    @classmethod
    def coerce(cls, value: object) -> Quorum | None:
        """A quorum from ``N``, ``{"approve": N, "reject": M}``, a Quorum, or None.

        Raises:
            ValueError: Anything else, or a count below 1 (the message names ``quorum``).
        """
        if value is None or isinstance(value, Quorum):
            return value
        if isinstance(value, bool) or not isinstance(value, int | Mapping):
            raise ValueError(
                f"quorum: expected a number of approvals such as 2 or "
                f'{{"approve": 2, "reject": 1}}, got {value!r}'
            )
        if isinstance(value, int):
            value = {"approve": value}
        return cls.model_validate(value)


@dataclass(frozen=True, slots=True)
class Tally:
    """Where the votes on a question stand.

    Attributes:
        quorum: What decides it.
        approvals: Who approved the current arguments, in order (each counted once).
        rejections: Who rejected, in order.
        superseded: Who approved arguments another approver has since edited (not counted).
        decision: ``approve`` or ``reject`` once the quorum is reached, else None.
        answer: The deciding vote's answer (the one to send), else None.
        decided_by: Who cast the deciding vote, else None.
    """

    quorum: Quorum
    approvals: tuple[str, ...] = ()
    rejections: tuple[str, ...] = ()
    superseded: tuple[str, ...] = ()
    decision: str | None = None
    answer: Any = None
    decided_by: str | None = None

    def counted(self, by: str) -> bool:
        """Whether ``by`` already has a vote that counts."""
        return by in self.approvals or by in self.rejections

    def describe(self, waiting_for: str | None = None) -> str:
        """``"1 of 2 approvals, waiting for finance"``, for lists, pages and messages."""
        need = self.quorum.approve
        text = f"{len(self.approvals)} of {need} approvals"
        if self.decision is not None:
            return f"{text}, {self.decision}d by {self.decided_by}"
        text += f", waiting for {waiting_for or f'{need - len(self.approvals)} more'}"
        if self.rejections:
            text += f"; {len(self.rejections)} of {self.quorum.reject} rejections"
        if self.superseded:
            text += (
                f" (the arguments were edited since {', '.join(self.superseded)} approved: "
                "they may approve the new ones)"
            )
        return text


def describe_votes(
    quorum: Quorum | None, votes: Sequence[Mapping[str, Any]], tags: Mapping[str, str]
) -> str | None:
    """``"1 of 2 approvals, waiting for finance"`` for a question with a quorum, else None.

    Waiting for the ``approver_group`` tag when the question has one.
    """
    if quorum is None:
        return None
    return tally(votes, quorum).describe(tags.get("approver_group"))


def vote_action(answer: object) -> str | None:
    """``approve`` or ``reject`` for a vote's answer object, else None (not a vote)."""
    if isinstance(answer, Mapping):
        action = cast("Mapping[str, Any]", answer).get("action")
        if action in VOTE_ACTIONS:
            return cast("str", action)
    return None


def _edit(answer: Mapping[str, Any]) -> str:
    # Here, not at import: the policy models import this module, and only a tally needs it.
    from agent_wait.core._canonical import answer_digest

    return answer_digest(answer.get("args"))


def tally(votes: Sequence[Mapping[str, Any]], quorum: Quorum) -> Tally:
    """Count ``votes`` (``{"by", "at", "answer"}``, in the order recorded) against ``quorum``.

    Votes after the deciding one are ignored (none is recorded once a quorum is reached).
    """
    approvals: list[str] = []
    rejections: list[str] = []
    superseded: list[str] = []
    edit: str | None = None
    for vote in votes:
        by = str(vote.get("by"))
        answer = cast("Mapping[str, Any]", vote.get("answer") or {})
        action = vote_action(answer)
        if action == APPROVE:
            mine = _edit(answer)
            if approvals and mine != edit:
                superseded.extend(a for a in approvals if a not in superseded)
                approvals = []
            edit = mine
            if by not in approvals:
                approvals.append(by)
            if by in superseded:
                superseded.remove(by)
            if len(approvals) >= quorum.approve:
                return Tally(
                    quorum, tuple(approvals), tuple(rejections), tuple(superseded), APPROVE,
                    dict(answer), by,
                )  # fmt: skip
        elif action == REJECT:
            if by not in rejections:
                rejections.append(by)
            if len(rejections) >= quorum.reject:
                return Tally(
                    quorum, tuple(approvals), tuple(rejections), tuple(superseded), REJECT,
                    dict(answer), by,
                )  # fmt: skip
    return Tally(quorum, tuple(approvals), tuple(rejections), tuple(superseded))
