"""RabbitMqAnnounce against the real broker: properties, routing, confirms, returns, failures."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pika
import pytest

from agent_wait.core import (
    AnnounceFailed,
    BatchEntryFailed,
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
from agent_wait.rabbitmq import RabbitMqAnnounce
from agent_wait.testing import sample_questions
from tests.config_check import assert_connect_tells_right_from_wrong

from .conftest import Broker

BY_GROUP = "questions.{tags[approver_group]}"


def question(qid: str, **tags: str) -> Question:
    return Question(
        question_id=qid,
        question={"function": "issue_refund", "args": {"amount": 41000, "note": "€"}},
        policy=WaitPolicy(timeout="P3D", tags=tags),
    )


def apublish_closing(
    announce: RabbitMqAnnounce, questions: list[Question], thread: str = "t"
) -> PublishReport:
    """``apublish`` on a fresh loop, closing the loop's client before the loop ends."""

    async def run() -> PublishReport:
        try:
            return await apublish(questions, thread, announce)
        finally:
            await announce.aclose()

    return asyncio.run(run())


def test_message_properties_and_body(amqp_url: str, broker: Broker) -> None:
    broker.declare("topic")
    queue = broker.queue("questions.*")
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange, routing_key=BY_GROUP) as announce:
        report = publish([question("q-1", approver_group="finance", region="eu")], "t", announce)
    assert report.ok, report.failures
    [message] = broker.drain(queue)
    assert message.routing_key == "questions.finance"
    assert message.body == report.envelopes[0].to_dict()
    props = message.properties
    assert (props.message_id, props.type, props.content_type) == (
        "wait.created:t:q-1",
        "wait.created",
        "application/json",
    )
    assert props.delivery_mode == pika.DeliveryMode.Persistent.value
    assert props.app_id == "agent-wait"
    assert props.headers == {"approver_group": "finance", "region": "eu"}


def test_topic_routing_by_tag_and_unroutable_reported_per_envelope(
    amqp_url: str, broker: Broker
) -> None:
    broker.declare("topic")
    finance = broker.queue("questions.finance")
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange, routing_key=BY_GROUP) as announce:
        qs = [question("q-1", approver_group="finance"), question("q-2", approver_group="ops")]
        report = publish([*qs, question("q-3", approver_group="finance")], "t", announce)
        areport = apublish_closing(announce, qs)
    assert [d.ok for d in report.deliveries] == [True, False, True]
    assert [d.ok for d in areport.deliveries] == [True, False]
    for failure in (report.failures[0], areport.failures[0]):
        assert isinstance(failure.exception, BatchEntryFailed)
        assert failure.exception.code == "NO_ROUTE"
        assert failure.error == (
            "BatchEntryFailed: RabbitMQ refused the entry: NO_ROUTE: exchange "
            f"{broker.exchange!r} has no queue bound for routing key 'questions.ops' "
            "(mandatory=true; bind a queue or set mandatory=false to let the broker drop it)"
        )
    assert [m.body["question_id"] for m in broker.drain(finance)] == ["q-1", "q-3", "q-1"]


def test_without_mandatory_the_broker_drops_unroutable_messages(
    amqp_url: str, broker: Broker
) -> None:
    broker.declare("topic")
    with RabbitMqAnnounce(
        amqp_url, exchange=broker.exchange, routing_key=BY_GROUP, mandatory=False
    ) as announce:
        assert publish([question("q-1", approver_group="nobody")], "t", announce).ok


def test_a_nack_fails_only_that_envelope(amqp_url: str, broker: Broker) -> None:
    # A full queue with overflow=reject-publish makes the broker nack: a real nack.
    broker.declare("direct")
    arguments = {"x-max-length": 1, "x-overflow": "reject-publish"}
    sync_queue = broker.queue("sync", arguments=arguments)
    broker.queue("async", arguments=arguments)
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange, routing_key="{tags[to]}") as announce:
        report = publish([question("q-1", to="sync"), question("q-2", to="sync")], "t", announce)
        areport = apublish_closing(
            announce, [question("q-3", to="async"), question("q-4", to="async")]
        )
    assert [d.ok for d in report.deliveries] == [True, False]
    assert [d.ok for d in areport.deliveries] == [True, False]
    for failure in (report.failures[0], areport.failures[0]):
        assert isinstance(failure.exception, BatchEntryFailed)
        assert failure.exception.code == "NACK"
    assert "the broker nacked question 'q-2'" in (report.failures[0].error or "")
    assert [m.body["question_id"] for m in broker.drain(sync_queue)] == ["q-1"]


def test_missing_exchange_is_reported_and_declare_creates_it(amqp_url: str, broker: Broker) -> None:
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange) as passive:
        report = publish(sample_questions(2), "t", passive)
        areport = apublish_closing(passive, sample_questions(1))
    for failure in (*report.failures, *areport.failures):
        assert (failure.error or "").startswith(
            f"LookupError: exchange {broker.exchange!r} does not exist on the broker; "
            "declare it or set declare=true"
        )
    assert len(report.failures) == 2
    broker.exchanges.append(broker.exchange)  # declared below: delete it afterwards
    with RabbitMqAnnounce(
        amqp_url, exchange=broker.exchange, declare=True, exchange_type="fanout", mandatory=False
    ) as declaring:
        assert publish(sample_questions(1), "t", declaring).ok
    queue = broker.queue()
    broker.channel.queue_bind(queue, broker.exchange)  # fanout: no key needed
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange, routing_key="") as passive:
        assert publish(sample_questions(1), "t", passive).ok
    assert len(broker.drain(queue)) == 1
    # declare=True made a durable fanout exchange: a passive declare with those finds it.
    broker.channel.exchange_declare(broker.exchange, "fanout", durable=True, passive=True)


def test_default_exchange_routes_to_a_queue_by_name(amqp_url: str, broker: Broker) -> None:
    queue = broker.channel.queue_declare("", exclusive=True).method.queue
    with RabbitMqAnnounce(amqp_url, exchange="", routing_key=queue) as announce:
        report = publish(sample_questions(2), "t", announce)
        areport = apublish_closing(announce, sample_questions(1))
    assert report.ok
    assert areport.ok
    assert len(broker.drain(queue)) == 3


def test_republish_is_a_second_message_with_the_same_message_id(
    amqp_url: str, broker: Broker
) -> None:
    broker.declare("topic")
    queue = broker.queue("#")
    with RabbitMqAnnounce(
        amqp_url, exchange=broker.exchange, routing_key="q.{thread_id}"
    ) as announce:
        first = publish([question("q-1")], "order.4471", announce, strict=True)
        second = publish([question("q-1")], "order.4471", announce, strict=True)
    messages = broker.drain(queue)
    assert [m.properties.message_id for m in messages] == ["wait.created:order.4471:q-1"] * 2
    assert [m.body["event_id"] for m in messages] == [
        first.envelopes[0].event_id,
        second.envelopes[0].event_id,
    ]
    # A dot in a substituted value would add a word to a topic routing key.
    assert {m.routing_key for m in messages} == {"q.order_4471"}


def test_routing_key_over_255_bytes_fails_that_envelope(amqp_url: str, broker: Broker) -> None:
    broker.declare("topic")
    queue = broker.queue("#")
    with RabbitMqAnnounce(
        amqp_url, exchange=broker.exchange, routing_key="q.{question_id}"
    ) as announce:
        report = publish([question("x" * 300), question("q-2")], "t", announce)
    assert [d.ok for d in report.deliveries] == [False, True]
    assert "is 302 bytes, over the AMQP limit of 255" in (report.failures[0].error or "")
    assert len(broker.drain(queue)) == 1


def test_reconnects_after_close_and_across_event_loops(amqp_url: str, broker: Broker) -> None:
    broker.declare("topic")
    queue = broker.queue("#")
    announce = RabbitMqAnnounce(amqp_url, exchange=broker.exchange)
    assert publish(sample_questions(1), "t", announce).ok
    announce.close()
    assert publish(sample_questions(1), "t", announce).ok
    for n in range(2):
        assert apublish_closing(announce, sample_questions(1), f"t-{n}").ok
    assert len(broker.drain(queue)) == 4


def test_unreachable_broker_is_reported_and_strict_raises(closed_port: int) -> None:
    with RabbitMqAnnounce(f"amqp://guest:guest@127.0.0.1:{closed_port}/", timeout=2) as down:
        report = publish(sample_questions(2), "t", down)
        areport = apublish_closing(down, sample_questions(2))
        with pytest.raises(AnnounceFailed):
            publish(sample_questions(1), "t", down, strict=True)
    failures = [*report.failures, *areport.failures]
    assert len(failures) == 4
    for failure in failures:
        assert (failure.error or "").startswith("DeliveryFailed: cannot reach RabbitMQ")
        assert isinstance(failure.exception, DeliveryFailed)
        assert failure.exception.retryable
        assert "guest:guest" not in (failure.error or "")


def test_configured_by_name_and_from_a_config_file(
    amqp_url: str, broker: Broker, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broker.declare("topic")
    queue = broker.queue("#")
    [from_python] = announcers_from_config(
        [{"use": "rabbitmq", "url": amqp_url, "exchange": broker.exchange, "routing_key": BY_GROUP}]
    )
    config = tmp_path / "approvals.toml"
    config.write_text(
        f'[[announce]]\nuse = "rabbitmq"\nurl_env = "TEST_AMQP_URL"\nexchange = "{broker.exchange}"\n',
        encoding="utf-8",
    )
    monkeypatch.setenv("TEST_AMQP_URL", amqp_url)
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    [from_file] = load_config().build()
    for built in (from_python, from_file):
        assert isinstance(built, RabbitMqAnnounce)
        assert built.name == "rabbitmq"
        with built:
            assert publish([question("q", approver_group="finance")], "t", built).ok
    assert [m.routing_key for m in broker.drain(queue)] == [
        "questions.finance",
        "agent-wait.questions",
    ]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"url": "http://localhost"},
            "announcer 'rabbitmq': option 'url': expected an amqp:// or amqps:// URL "
            "(got 'http://localhost')",
        ),
        ({"url": "https://user:s3cret@host/"}, "(got 'https://user:***@host/')"),
        ({"url": "amqp://user:s3cret@host/?heartbeat=x"}, "option 'url': not usable"),
        ({"exchange": "x" * 256}, "option 'exchange': expected a name of at most 255 bytes"),
        (
            {"exchange_type": "x-delayed"},
            "option 'exchange_type': Input should be 'direct', 'topic', 'fanout' or 'headers' "
            "(got 'x-delayed')",
        ),
        (
            {"exchange": "", "declare": True},
            "option 'declare': the default exchange '' cannot be declared",
        ),
        ({"mandatory": "yes"}, "option 'mandatory': Input should be a valid boolean (got 'yes')"),
        ({"declare": 1}, "option 'declare': Input should be a valid boolean (got 1)"),
        ({"timeout": 0}, "option 'timeout': Input should be greater than 0 (got 0)"),
        (
            {"routing_key": "q.{tag}"},
            "option 'routing_key': unknown placeholder {tag} in 'q.{tag}'",
        ),
        ({"routing_key": "q.{thread_id:>5}"}, "takes no format spec or conversion"),
        ({"routing_key": "q" * 256}, "is over the 255-byte limit"),
        ({"routing_key": 5}, "option 'routing_key': Input should be a valid string (got 5)"),
    ],
)
def test_invalid_options_name_the_field_and_value(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        announcer("rabbitmq", **options)
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_template_tag_missing_fails_that_envelope(amqp_url: str, broker: Broker) -> None:
    broker.declare("topic")
    queue = broker.queue("#")
    with RabbitMqAnnounce(amqp_url, exchange=broker.exchange, routing_key=BY_GROUP) as announce:
        report = publish(
            [question("q-1", team="a"), question("q-2", approver_group="b")], "t", announce
        )
    assert [d.ok for d in report.deliveries] == [False, True]
    assert report.failures[0].error == (
        f"LookupError: routing_key template {BY_GROUP!r} needs tag 'approver_group', but question "
        "'q-1' has tags ['team']"
    )
    assert len(broker.drain(queue)) == 1


def test_config_check_connect_reaches_the_server_and_fails_on_a_wrong_port(
    amqp_url: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = assert_connect_tells_right_from_wrong(
        monkeypatch,
        {"use": "rabbitmq", "url": amqp_url, "exchange": ""},
        {
            "use": "rabbitmq",
            "url": f"amqp://guest:s3cret@127.0.0.1:{closed_port}/",
            "exchange": "",
            "timeout": 2,
        },
    )
    assert "s3cret" not in "\n".join(lines)


def test_config_check_connect_fails_on_a_missing_exchange(
    amqp_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    right = {"use": "rabbitmq", "url": amqp_url, "exchange": ""}
    missing = {"use": "rabbitmq", "url": amqp_url, "exchange": "agent-wait-no-such-exchange"}
    lines = assert_connect_tells_right_from_wrong(monkeypatch, right, missing)
    assert "NOT_FOUND" in lines[4]
