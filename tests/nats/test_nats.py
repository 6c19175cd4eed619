"""NatsAnnounce against the real JetStream: body, headers, dedupe window, subjects, failures."""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from typing import Any

import pytest
from nats.js import JetStreamContext

from agent_wait.core import (
    AnnounceFailed,
    ConfigError,
    DeliveryFailed,
    PublishReport,
    Question,
    WaitPolicy,
    announcer,
    announcers_from_config,
    apublish,
    load_config,
    publish,
)
from agent_wait.nats import NatsAnnounce
from agent_wait.testing import sample_questions
from tests.config_check import assert_connect_tells_right_from_wrong


def question(qid: str, **tags: str) -> Question:
    return Question(
        question_id=qid,
        question={"function": "issue_refund", "args": {"amount": 41000}},
        policy=WaitPolicy(tags=tags),
    )


def apublish_closing(
    announce: NatsAnnounce, questions: list[Question], thread: str = "t"
) -> PublishReport:
    """``apublish`` on a fresh loop, closing the loop's client before the loop ends."""

    async def run() -> PublishReport:
        try:
            return await apublish(questions, thread, announce)
        finally:
            await announce.aclose()

    return asyncio.run(run())


def by_group(stream: Any) -> str:
    return stream.prefix + ".questions.{tags[approver_group]}"


def test_body_subject_and_headers(nats_url: str, stream: Any) -> None:
    with NatsAnnounce(nats_url, subject=by_group(stream), stream=stream.name) as announce:
        report = publish(
            [question("q-1", approver_group="finance", region="eu")], "order-4471", announce
        )
    assert report.ok, report.failures
    [message] = stream.messages()
    assert message.subject == f"{stream.prefix}.questions.finance"
    assert message.body == report.envelopes[0].to_dict()
    assert message.headers == {
        "Nats-Msg-Id": "wait.created:order-4471:q-1",
        "Content-Type": "application/json",
        "Agent-Wait-Tag-approver_group": "finance",
        "Agent-Wait-Tag-region": "eu",
        "Nats-Expected-Stream": stream.name,
    }


def test_unusual_tags_are_percent_encoded_in_headers(nats_url: str, stream: Any) -> None:
    with NatsAnnounce(nats_url, subject=stream.prefix + ".q") as announce:
        report = publish([question("q-1", **{"team lead": "Zoë\r\nX-Injected: 1"})], "t", announce)
    assert report.ok, report.failures
    [message] = stream.messages()
    assert message.headers["Agent-Wait-Tag-team%20lead"] == "Zo%C3%AB%0D%0AX-Injected: 1"
    assert "X-Injected" not in message.headers
    assert message.body["tags"] == {"team lead": "Zoë\r\nX-Injected: 1"}


def test_republish_is_dropped_inside_the_duplicate_window(
    nats_url: str, stream: Any, admin: Any, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="agent_wait.nats._announcer")
    with NatsAnnounce(nats_url, subject=by_group(stream), stream=stream.name) as announce:
        first = publish([question("q-1", approver_group="finance")], "t", announce, strict=True)
        again = publish([question("q-1", approver_group="finance")], "t", announce, strict=True)
        asynchronous = apublish_closing(announce, [question("q-1", approver_group="finance")])
    assert again.ok
    assert asynchronous.ok
    [message] = stream.messages()
    assert message.body["event_id"] == first.envelopes[0].event_id
    assert "wait.created:t:q-1 was a duplicate" in caplog.text

    async def republish(js: JetStreamContext) -> Any:
        headers = {"Nats-Msg-Id": "wait.created:t:q-1"}
        return await js.publish(f"{stream.prefix}.questions.finance", b"{}", headers=headers)

    ack = admin.run(republish)
    assert ack.duplicate is True
    assert len(stream.messages()) == 1


def test_tags_and_ids_route_to_sanitised_subject_tokens(
    nats_url: str, stream: Any, admin: Any
) -> None:
    subject = stream.prefix + ".{tags[approver_group]}.{thread_id}"
    with NatsAnnounce(nats_url, subject=subject) as announce:
        publish([question("q-1", approver_group="finance")], "order-1", announce, strict=True)
        publish([question("q-2", approver_group="ops")], "order-2", announce, strict=True)
        publish([question("q-3", approver_group="fin.ance *>")], "order.3 x", announce, strict=True)
        publish([question("q-4", approver_group="")], "t", announce, strict=True)
    subjects = [m.subject for m in stream.messages()]
    assert subjects == [
        f"{stream.prefix}.finance.order-1",
        f"{stream.prefix}.ops.order-2",
        f"{stream.prefix}.fin_ance___.order_3_x",
        f"{stream.prefix}._.t",
    ]

    async def finance_only(js: JetStreamContext) -> list[str]:
        sub = await js.pull_subscribe(f"{stream.prefix}.finance.*", stream=stream.name)
        return [json.loads(m.data)["question_id"] for m in await sub.fetch(10, timeout=2)]

    assert admin.run(finance_only) == ["q-1"]


def test_a_missing_tag_fails_only_that_envelope(nats_url: str, stream: Any) -> None:
    with NatsAnnounce(nats_url, subject=by_group(stream), stream=stream.name) as announce:
        qs = [
            question("q-1", approver_group="a"),
            question("q-2", team="x"),
            question("q-3", approver_group="b"),
        ]
        report = publish(qs, "t", announce)
        areport = apublish_closing(announce, [question("q-4"), question("q-5", approver_group="c")])
    assert [d.ok for d in report.deliveries] == [True, False, True]
    assert report.failures[0].error == (
        f"LookupError: subject template {by_group(stream)!r} needs tag 'approver_group', "
        "but question 'q-2' has tags ['team']"
    )
    assert [d.ok for d in areport.deliveries] == [False, True]
    assert [m.body["question_id"] for m in stream.messages()] == ["q-1", "q-3", "q-5"]


@pytest.mark.parametrize(
    ("subject", "message"),
    [
        ("", "option 'subject': String should have at least 1 character (got '')"),
        ("a.{tag}", "unknown placeholder {tag} in 'a.{tag}'"),
        ("a.{tags}", "unknown placeholder {tags} in 'a.{tags}'"),
        ("a.{thread_id:>9}", "placeholder {thread_id} in 'a.{thread_id:>9}' takes no format spec"),
        ("a.{question_id!r}", "takes no format spec or conversion"),
        ("a.{thread_id", "'a.{thread_id' is not a valid template"),
        ("a..b", "'a..b' is not a publish subject (token ''"),
        ("a.*", "'a.*' is not a publish subject (token '*'"),
        ("a.>", "'a.>' is not a publish subject"),
        ("a b.c", "'a b.c' is not a publish subject"),
        ("q.{thread_id}.", "'q.{thread_id}.' is not a publish subject"),
    ],
)
def test_subject_template_is_checked_at_construction(subject: str, message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        NatsAnnounce(subject=subject)
    assert message in str(raised.value)


def test_create_stream_makes_a_stream_for_the_template(nats_url: str, admin: Any) -> None:
    name, prefix = f"AW_TEST_{uuid.uuid4().hex[:12]}", f"awtest.{uuid.uuid4().hex[:12]}"
    subject = prefix + ".q.{tags[approver_group]}"
    try:
        with NatsAnnounce(
            nats_url, subject=subject, stream=name, create_stream=True, duplicate_window=30
        ) as announce:
            assert publish([question("q-1", approver_group="finance")], "t", announce).ok
            # A second announcer finds the stream and leaves it as it is.
            with NatsAnnounce(nats_url, subject=subject, stream=name, create_stream=True) as other:
                assert publish([question("q-2", approver_group="ops")], "t", other).ok

        async def info(js: JetStreamContext) -> Any:
            return await js.stream_info(name)

        found = admin.run(info)
        assert found.config.subjects == [f"{prefix}.q.*"]
        assert found.config.duplicate_window == 30
        assert found.state.messages == 2
    finally:
        admin.drop(name)


def test_no_stream_for_the_subject_is_reported(nats_url: str) -> None:
    subject = f"awtest-nostream.{uuid.uuid4().hex}"
    with NatsAnnounce(nats_url, subject=subject, timeout=2) as announce:
        report = publish([question("q-1")], "t", announce)
    assert report.failures[0].error == (
        f"LookupError: no JetStream stream stores subject {subject!r}; create one or set create_stream"
    )


def test_a_message_captured_by_another_stream_is_reported(nats_url: str, stream: Any) -> None:
    with NatsAnnounce(
        nats_url, subject=stream.prefix + ".q", stream="AW_TEST_OTHER", timeout=2
    ) as announce:
        report = publish([question("q-1")], "t", announce)
    assert not report.ok
    assert "expected stream does not match" in (report.failures[0].error or "")


def test_unreachable_server_is_reported_and_strict_raises(closed_port: int) -> None:
    with NatsAnnounce(f"nats://127.0.0.1:{closed_port}", timeout=2) as down:
        report = publish(sample_questions(2), "t", down)
        areport = apublish_closing(down, sample_questions(1))
        with pytest.raises(AnnounceFailed):
            publish(sample_questions(1), "t", down, strict=True)
    expected = (
        "DeliveryFailed: NATS: ConnectionError: cannot reach NATS at "
        f"nats://127.0.0.1:{closed_port}: ConnectionRefusedError"
    )
    assert [d.ok for d in report.deliveries] == [False, False]
    for failure in (*report.failures, *areport.failures):
        assert (failure.error or "").startswith(expected)
        assert isinstance(failure.exception, DeliveryFailed)
        assert failure.exception.retryable


async def test_sync_publish_works_inside_a_running_event_loop(nats_url: str, stream: Any) -> None:
    # The sync path runs on the announcer's private loop thread, so a sync host call made from
    # async code neither fails with "loop already running" nor deadlocks.
    with NatsAnnounce(nats_url, subject=stream.prefix + ".q", stream=stream.name) as announce:
        report = publish(sample_questions(2), "t", announce, strict=True)
        areport = await apublish(sample_questions(1), "t", announce, strict=True)
        await announce.aclose()
    assert report.ok
    assert areport.ok
    assert len(await asyncio.to_thread(stream.messages)) == 3


def test_one_announcer_across_event_loops(nats_url: str, stream: Any) -> None:
    announce = NatsAnnounce(nats_url, subject=stream.prefix + ".q", stream=stream.name)
    for n in range(2):
        assert asyncio.run(apublish(sample_questions(1), f"t-{n}", announce, strict=True)).ok
    announce.close()
    assert len(stream.messages()) == 2


def test_configured_by_name(nats_url: str, stream: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    entry = {
        "use": "nats",
        "url": [nats_url],
        "subject": stream.prefix + ".q",
        "stream": stream.name,
    }
    [from_python] = announcers_from_config([entry])
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([entry]))
    [from_env] = load_config().build()
    for built in (from_python, from_env):
        assert isinstance(built, NatsAnnounce)
        assert (built.name, built.servers, built.stream) == ("nats", (nats_url,), stream.name)
        with built:
            report = publish(sample_questions(1), "t", built)
        assert report.ok
        assert report.deliveries[0].announcer == "nats"
    assert len(stream.messages()) == 2


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"url": "http://127.0.0.1:4222"},
            "announcer 'nats': option 'url': expected nats:///tls:///ws:///wss:// URLs",
        ),
        (
            {"url": "nats://a:4222,http://user:s3cret@b"},
            "(got 'nats://a:4222,http://user:***@b')",
        ),
        ({"url": ["nats://a:4222", "http://user:s3cret@b"]}, "'http://user:***@b']"),
        ({"url": []}, "option 'url': expected nats:///tls:///ws:///wss:// URLs"),
        (
            {"stream": "A.B"},
            "option 'stream': expected a stream name without whitespace, '.', '*', '>' or "
            "slashes (got 'A.B')",
        ),
        ({"create_stream": True}, "option 'create_stream': true needs the stream option"),
        (
            {"create_stream": "yes", "stream": "S"},
            "option 'create_stream': Input should be a valid boolean (got 'yes')",
        ),
        ({"duplicate_window": 0}, "option 'duplicate_window': Input should be greater than 0"),
        ({"timeout": "soon"}, "option 'timeout': Input should be a valid number"),
    ],
)
def test_invalid_options_name_the_field_and_value(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        announcer("nats", **options)
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_config_check_connect_reaches_the_server_and_fails_on_a_wrong_port(
    nats_url: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = assert_connect_tells_right_from_wrong(
        monkeypatch,
        {"use": "nats", "url": nats_url},
        {"use": "nats", "url": f"nats://user:s3cret@127.0.0.1:{closed_port}", "timeout": 2},
    )
    assert "s3cret" not in "\n".join(lines)


def test_config_check_connect_fails_on_a_missing_stream(
    nats_url: str, stream: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    right = {"use": "nats", "url": nats_url, "stream": stream.name}
    missing = {"use": "nats", "url": nats_url, "stream": stream.name + "_MISSING"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, missing)
    assert "NotFoundError" in lines[4]
