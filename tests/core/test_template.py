"""EnvelopeTemplate: destination templates shared by routing transports."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agent_wait.core import ConfigError, Question, WaitPolicy, build_envelope
from agent_wait.core.transport import EnvelopeTemplate

ENVELOPE = build_envelope(
    Question(question_id="q.1", question="ok?", policy=WaitPolicy(tags={"group": "fin.ance"})),
    "thread 1",
    now=datetime(2026, 1, 1, tzinfo=UTC),
)


def test_renders_fields_and_tags_through_clean() -> None:
    template = EnvelopeTemplate(
        "q.{type}.{tags[group]}.{thread_id}.{question_id}", option="o", name="key"
    )
    assert template.tags == ("group",)
    assert template.literal == "q...."
    assert template.join("x") == "q.x.x.x.x"
    assert template.render(ENVELOPE, lambda v: v.replace(".", "_").replace(" ", "_")) == (
        "q.wait_created.fin_ance.thread_1.q_1"
    )


def test_a_missing_tag_names_template_tag_and_question() -> None:
    template = EnvelopeTemplate("{tags[region]}", option="o", name="subject")
    with pytest.raises(
        LookupError, match=r"subject template '\{tags\[region\]\}' needs tag 'region'.*'q\.1'"
    ):
        template.render(ENVELOPE, str)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{user}", "unknown placeholder {user}"),
        ("{thread_id:>10}", "no format spec"),
        ("{thread_id!r}", "no format spec"),
        ("{", "not a valid template"),
        (3, "expected a string"),
    ],
)
def test_bad_templates_name_the_option(text: object, message: str) -> None:
    with pytest.raises(ConfigError, match="my option") as info:
        EnvelopeTemplate(text, option="my option", name="key")  # type: ignore[arg-type]
    assert message in str(info.value)
