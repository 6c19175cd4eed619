"""What a plugin author works with: questions, envelopes as bytes, BaseAnnounce, transport helpers.

Run it: ``python docs/examples/plugin_basics.py`` (needs only agent-wait-core).
"""

from __future__ import annotations

import json

from agent_wait.core import BaseAnnounce, Question, WaitEnvelope, WaitPolicy, publish
from agent_wait.core.options import redact
from agent_wait.core.transport import EnvelopeTemplate


class ListAnnounce(BaseAnnounce):
    """Keeps each envelope body, as bytes, with the topic a template routes it to."""

    # No `name`: it defaults to the class name ("ListAnnounce"); built by its registered name,
    # through announcer("...") or configuration, it is named after the registration instead.

    def __init__(self, topic: str = "questions/{tags[approver_group]}") -> None:
        # BaseAnnounce has no __init__ of its own: calling super().__init__() is not needed.
        self.topic = EnvelopeTemplate(topic, option="list announcer option topic", name="topic")
        self.sent: list[tuple[str, bytes]] = []
        self.closed = 0

    def deliver(self, envelope: WaitEnvelope) -> None:
        topic = self.topic.render(envelope, clean=lambda value: value.replace("/", "_"))
        self.sent.append((topic, envelope.to_json()))  # bytes: send them as they are

    def close(self) -> None:
        self.closed += 1  # publish never closes an announcer it was handed; `with` does


question = Question(
    question_id="refund-4471",
    question={"function": "issue_refund", "args": {"order_id": "4471", "amount": 41000}},
    policy=WaitPolicy(timeout="P3D", tags={"approver_group": "finance"}, default="reject"),
)

with ListAnnounce() as sink:
    report = publish([question], "order-4471", announce=sink)
    assert report.ok, report.failures
    assert [d.announcer for d in report.deliveries] == ["ListAnnounce"]
assert sink.closed == 1

topic, body = sink.sent[0]
assert topic == "questions/finance"
assert isinstance(body, bytes)
envelope = json.loads(body)
assert envelope["question_id"] == "refund-4471"
assert envelope["tags"] == {"approver_group": "finance"}
assert envelope["allowed_actions"] == ["approve", "reject"]
assert envelope["default"] == "reject"
assert envelope["expires_at"] is not None  # published_at + P3D
assert envelope["reply_with"] == {
    "thread_id": "order-4471",
    "question_id": "refund-4471",
    "answer": None,
}
assert body == report.envelopes[0].to_json()

# A template needing a tag the envelope lacks raises LookupError at delivery: reported, not raised.
untagged = Question(question_id="refund-4472", question={"function": "issue_refund"})
report = publish([untagged], "order-4472", announce=ListAnnounce())
assert not report.ok
assert "needs tag 'approver_group'" in (report.failures[0].error or "")

# Error messages name the URL without its credentials.
assert redact("amqp://app:s3cret@broker:5672/") == "amqp://app:***@broker:5672/"
assert redact("redis://cache:6379/0") == "redis://cache:6379/0"

print("published", envelope["question_id"], "to", topic, f"({len(body)} bytes)")
