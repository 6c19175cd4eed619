"""Answers a host can trust, on real Strands agents and file sessions.

The consumer is the one the message formats describe: copy ``reply_with``, set ``answer``, send.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from agent_wait.core import MemoryAnnounce, Outcome
from agent_wait.host import AnswerTrust
from agent_wait.strands import handle_message
from tests.strands.conftest import Threads
from tests.strands.fake_model import Call, ScriptedModel
from tests.strands.test_host import NOW, REFUND, Factory, Tools, only_envelope, reply, start

NEW, OLD = "n" * 40, "o" * 40
APPROVE = {"action": "approve"}


def test_signed_replies_rotation_and_refusals(factory: Factory, inbox: MemoryAnnounce) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    old = AnswerTrust([OLD])
    envelope = only_envelope(handle_message(threads, start(), inbox, trust=old))
    good = reply(envelope, APPROVE)
    assert good["token"].startswith("v1.")
    rotated, retired = AnswerTrust([NEW, OLD]), AnswerTrust([NEW])
    for bad in (
        {k: v for k, v in good.items() if k != "token"},
        {**good, "question_id": "another-question"},
        {**good, "thread_id": "order-9999"},
    ):
        assert handle_message(threads, bad, inbox, trust=rotated).outcome is Outcome.UNAUTHORIZED
    assert handle_message(threads, good, inbox, trust=retired).outcome is Outcome.UNAUTHORIZED
    assert tools.runs == []
    assert threads.invocations == ["order-4471"]
    resumed = handle_message(threads, good, inbox, trust=rotated)
    assert resumed.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000"]


def test_expiry_policies_and_strict_actions(factory: Factory, inbox: MemoryAnnounce) -> None:
    tools = Tools()
    threads = factory(ScriptedModel([REFUND]), tools.all)
    refuse = AnswerTrust([NEW], expired="refuse", strict_actions=True)
    envelope = only_envelope(
        handle_message(threads, start(), inbox, trust=refuse, clock=lambda: NOW)
    )
    assert envelope.expires_at == "2026-09-14T09:00:00Z"
    late = NOW + timedelta(days=4)
    approve = reply(envelope, APPROVE)
    refused = handle_message(threads, approve, inbox, trust=refuse, clock=lambda: late)
    assert refused.outcome is Outcome.EXPIRED
    maybe = reply(envelope, {"action": "maybe"})
    invalid = handle_message(threads, maybe, inbox, trust=refuse, clock=lambda: NOW)
    assert invalid.outcome is Outcome.INVALID_ANSWER
    assert tools.runs == []
    in_time = handle_message(threads, approve, inbox, trust=refuse, clock=lambda: NOW)
    assert in_time.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 41000"]


def test_a_call_proposed_again_with_other_arguments_refuses_the_old_approval(
    tmp_path: Path, inbox: MemoryAnnounce
) -> None:
    tools, trust = Tools(), AnswerTrust([NEW])
    lost = Threads(ScriptedModel([REFUND]), tools.all, tmp_path / "lost")
    approval = reply(only_envelope(handle_message(lost, start(), inbox, trust=trust)), APPROVE)
    # The session is lost (restored from an older backup): the redelivered start runs the model
    # again, which proposes the call under the same tool use id with another amount.
    other = Call("issue_refund", {"order_id": "order-4471", "amount": 9_999_999})
    threads = Threads(ScriptedModel([other]), tools.all, tmp_path / "restored")
    asked_again = only_envelope(handle_message(threads, start(), inbox, trust=trust))
    assert asked_again.question_id == approval["question_id"]
    handled = handle_message(threads, approval, inbox, trust=trust)
    assert handled.outcome is Outcome.STALE_APPROVAL
    assert tools.runs == []
    # The question as it is now went out again; approving that one runs the new call.
    republished = only_envelope(handled)
    assert republished.question == {"function": "issue_refund", "args": other.input}
    resumed = handle_message(threads, reply(republished, APPROVE), inbox, trust=trust)
    assert resumed.outcome is Outcome.RESUMED
    assert tools.runs == ["refund order-4471 9999999"]
