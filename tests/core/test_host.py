"""The shared result of every framework's handle_message."""

from __future__ import annotations

from agent_wait.core import Handled, Outcome, PublishReport


def test_outcome_values_are_the_documented_strings() -> None:
    assert [o.value for o in Outcome] == [
        "started",
        "resumed",
        "republished",
        "duplicate",
        "unknown_question",
        "invalid_answer",
        "held",
    ]


def test_only_starts_and_resumes_ran() -> None:
    ran = {o for o in Outcome if Handled(o).ran}
    assert ran == {Outcome.STARTED, Outcome.RESUMED}
    # A held answer is stored, not run, and publishes nothing.
    held = Handled(Outcome.HELD, detail="waiting for q2")
    assert not held.ran
    assert held.report == PublishReport()
    assert held.question_ids == []
