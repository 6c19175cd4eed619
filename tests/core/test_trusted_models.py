"""Envelopes built without validation (``trusted``) behave like validated ones."""

from __future__ import annotations

from datetime import UTC, datetime

from agent_wait.core import Question, WaitEnvelope, WaitPolicy, build_envelope

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def _envelopes() -> list[WaitEnvelope]:
    policy = WaitPolicy(timeout="P3D", tags={"team": "finance"})
    return [
        build_envelope(
            Question(question_id=f"q{i}", question={"n": i}, policy=policy), "t1", now=NOW
        )
        for i in range(3)
    ]


def test_every_field_counts_as_set() -> None:
    for envelope in _envelopes():
        assert envelope.model_fields_set == set(WaitEnvelope.model_fields)
        assert envelope.reply_with.model_fields_set == {"thread_id", "question_id", "answer"}
        assert WaitEnvelope.model_validate_json(envelope.to_json()) == envelope


def test_model_copy_with_update_leaves_other_envelopes_alone() -> None:
    first, second, _ = _envelopes()
    changed = first.model_copy(update={"tags": {"team": "legal"}})
    assert changed.tags == {"team": "legal"}
    assert first.tags == {"team": "finance"}
    assert changed.model_fields_set == set(WaitEnvelope.model_fields)
    assert second.model_fields_set == set(WaitEnvelope.model_fields)
    assert first.model_dump(exclude_unset=True) == first.model_dump()


def test_envelopes_do_not_share_mutable_fields() -> None:
    first, second, _ = _envelopes()
    assert first.tags is not second.tags
    assert first.allowed_actions is not second.allowed_actions
    assert first.reply_with is not second.reply_with
