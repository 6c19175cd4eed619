"""RedisAnnounce against the real Redis: entry fields, consumer groups, dedupe, trimming, failures."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from agent_wait.core import (
    AnnounceFailed,
    ConfigError,
    PublishReport,
    Question,
    WaitPolicy,
    announcer,
    announcers_from_config,
    apublish,
    default_announcers,
    publish,
)
from agent_wait.redis import RedisAnnounce
from agent_wait.testing import sample_questions
from tests.config_check import assert_connect_tells_right_from_wrong


def question(qid: str, **tags: str) -> Question:
    return Question(
        question_id=qid,
        question={"function": "issue_refund", "args": {"amount": 41000, "note": "€ ✓"}},
        policy=WaitPolicy(timeout="P3D", default={"action": "reject"}, tags=tags),
    )


def apublish_closing(
    announce: RedisAnnounce, questions: list[Question], thread: str = "t"
) -> PublishReport:
    """``apublish`` on a fresh loop, closing the loop's client before the loop ends."""

    async def run() -> PublishReport:
        try:
            return await apublish(questions, thread, announce)
        finally:
            await announce.aclose()

    return asyncio.run(run())


@pytest.fixture
def announce(redis_url: str, names: tuple[str, str]) -> Iterator[RedisAnnounce]:
    stream, prefix = names
    with RedisAnnounce(redis_url, stream=stream, index_prefix=prefix) as built:
        yield built


def test_entry_carries_the_contract_body_ids_and_tags(
    announce: RedisAnnounce, client: redis.Redis
) -> None:
    report = publish(
        [question("q-1", approver_group="finance", region="eu")], "order-4471", announce
    )
    assert report.ok, report.failures
    [(_, fields)] = client.xrange(announce.stream)
    envelope = report.envelopes[0]
    assert json.loads(fields.pop("envelope")) == envelope.to_dict()
    assert fields == {
        "dedupe_key": "wait.created:order-4471:q-1",
        "type": "wait.created",
        "thread_id": "order-4471",
        "question_id": "q-1",
        "tag:approver_group": "finance",
        "tag:region": "eu",
    }


def test_consumer_group_reads_every_question_in_order(
    announce: RedisAnnounce, client: redis.Redis
) -> None:
    client.xgroup_create(announce.stream, "approvals-ui", id="0", mkstream=True)
    questions = sample_questions(5)
    report = publish(questions, "thread-1", announce, strict=True)
    [(_, entries)] = client.xreadgroup("approvals-ui", "ui-1", {announce.stream: ">"}, count=10)
    bodies = [json.loads(fields["envelope"]) for _, fields in entries]
    assert [b["question_id"] for b in bodies] == [q.question_id for q in questions]
    assert bodies == [e.to_dict() for e in report.envelopes]
    assert client.xack(announce.stream, "approvals-ui", *[entry_id for entry_id, _ in entries]) == 5
    assert client.xreadgroup("approvals-ui", "ui-1", {announce.stream: ">"}) == []


def test_without_index_a_republish_is_a_second_entry_with_the_same_dedupe_key(
    announce: RedisAnnounce, client: redis.Redis
) -> None:
    first = publish([question("q-1")], "t", announce, strict=True)
    second = publish([question("q-1")], "t", announce, strict=True)
    entries = client.xrange(announce.stream)
    assert [fields["dedupe_key"] for _, fields in entries] == ["wait.created:t:q-1"] * 2
    event_ids = [json.loads(fields["envelope"])["event_id"] for _, fields in entries]
    assert event_ids == [first.envelopes[0].event_id, second.envelopes[0].event_id]


def test_index_absorbs_a_republish_and_never_overwrites_the_hash(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    stream, prefix = names
    with RedisAnnounce(redis_url, stream=stream, index=True, index_prefix=prefix) as indexed:
        first = publish([question("q-1", approver_group="finance")], "t", indexed, strict=True)
        key = prefix + "wait.created:t:q-1"
        client.hset(key, "status", "answered")  # a consumer took it
        second = publish([question("q-1", approver_group="finance")], "t", indexed, strict=True)
        asynchronous = apublish_closing(indexed, [question("q-1")])
    assert second.ok
    assert asynchronous.ok
    [(entry_id, fields)] = client.xrange(stream)
    stored = client.hgetall(key)
    assert stored["status"] == "answered"
    assert stored["stream_id"] == entry_id
    assert json.loads(stored["envelope"])["event_id"] == first.envelopes[0].event_id
    assert {k: v for k, v in stored.items() if k not in ("status", "stream_id")} == fields
    assert client.ttl(key) == -1  # no index_ttl: kept until a consumer deletes it


def test_index_ttl_expires_the_hash(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    stream, prefix = names
    with RedisAnnounce(
        redis_url, stream=stream, index=True, index_prefix=prefix, index_ttl=600
    ) as indexed:
        publish([question("q-1")], "t", indexed, strict=True)
    assert 0 < client.pttl(prefix + "wait.created:t:q-1") <= 600_000


def test_maxlen_trims_approximately(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    stream, _ = names
    with RedisAnnounce(redis_url, stream=stream, maxlen=10) as trimmed:
        for start in range(0, 300, 50):
            qs = [question(f"q-{n}") for n in range(start, start + 50)]
            assert publish(qs, "t", trimmed).ok
    # MAXLEN ~ trims whole radix-tree nodes (100 entries by default), never below the limit.
    assert 10 <= client.xlen(stream) <= 110


def test_one_refused_entry_never_fails_the_rest_of_the_pipeline(
    redis_url: str, names: tuple[str, str], client: redis.Redis
) -> None:
    # A real per-command failure: an ACL user that may touch the stream and the hashes of
    # "ok-*" questions only, so the script for "denied" gets NOPERM inside the same pipeline.
    stream, prefix = names
    user, password = f"agent-wait-test-{uuid.uuid4().hex[:8]}", uuid.uuid4().hex
    client.acl_setuser(
        user,
        enabled=True,
        passwords=[f"+{password}"],
        keys=[stream, f"{prefix}wait.created:t:ok-*"],
        commands=["+@all"],
    )
    try:
        url = redis_url.replace("redis://", f"redis://{user}:{password}@")
        with RedisAnnounce(url, stream=stream, index=True, index_prefix=prefix) as limited:
            qs = [question("ok-1"), question("denied"), question("ok-2")]
            report = publish(qs, "t", limited)
            areport = apublish_closing(limited, [question("denied"), question("ok-3")])
    finally:
        client.acl_deluser(user)
    assert [d.ok for d in report.deliveries] == [True, False, True]
    assert "NoPermissionError" in (report.failures[0].error or "")
    assert [d.ok for d in areport.deliveries] == [False, True]
    ids = [fields["question_id"] for _, fields in client.xrange(stream)]
    assert ids == ["ok-1", "ok-2", "ok-3"]
    assert password not in (report.failures[0].error or "")


def test_async_path_and_one_announcer_across_event_loops(
    announce: RedisAnnounce, client: redis.Redis
) -> None:
    # A host may call asyncio.run() per message: each loop gets its own asyncio client.
    for n in range(2):
        report = asyncio.run(apublish(sample_questions(2), f"thread-{n}", announce, strict=True))
        assert report.ok
    asyncio.run(announce.aclose())
    assert client.xlen(announce.stream) == 4


def test_unreachable_server_is_reported_and_strict_raises(closed_port: int) -> None:
    down = RedisAnnounce(f"redis://127.0.0.1:{closed_port}/0", timeout=2)
    report = publish(sample_questions(2), "t", down)
    assert [d.ok for d in report.deliveries] == [False, False]
    assert all("ConnectionError" in (d.error or "") for d in report.failures)
    areport = apublish_closing(down, sample_questions(1))
    assert not areport.ok
    with pytest.raises(AnnounceFailed) as raised:
        publish(sample_questions(1), "t", down, strict=True)
    assert str(closed_port) in str(raised.value)
    down.close()


def test_configured_by_name(
    redis_url: str, names: tuple[str, str], client: redis.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    stream, _ = names
    monkeypatch.setenv("TEST_REDIS_URL", redis_url)
    [built] = announcers_from_config(
        [{"use": "redis", "url_env": "TEST_REDIS_URL", "stream": stream, "maxlen": 1000}]
    )
    assert isinstance(built, RedisAnnounce)
    assert (built.name, built.url, built.maxlen) == ("redis", redis_url, 1000)
    with built:
        assert publish(sample_questions(1), "t", built).ok
    assert client.xlen(stream) == 1


def test_configured_from_agent_wait_toml(
    redis_url: str, names: tuple[str, str], client: redis.Redis, tmp_path: Path
) -> None:
    stream, _ = names
    # The root conftest chdirs into tmp_path, so this file is the configuration.
    (tmp_path / "agent-wait.toml").write_text(
        f'[[announce]]\nuse = "redis"\nurl = "{redis_url}"\nstream = "{stream}"\n', encoding="utf-8"
    )
    report = publish(sample_questions(1), "t")
    for built in default_announcers():
        built.close()
    assert report.ok
    assert report.deliveries[0].announcer == "redis"
    assert client.xlen(stream) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"url": "http://127.0.0.1:6379"},
            "announcer 'redis': option 'url': expected a redis:///rediss:///unix:// URL "
            "(got 'http://127.0.0.1:6379')",
        ),
        ({"url": "http://user:s3cret@host/0"}, "(got 'http://user:***@host/0')"),
        ({"url": "redis://user:p@s3cret@host/0", "timeout": 0}, "option 'timeout'"),
        ({"stream": ""}, "option 'stream': String should have at least 1 character (got '')"),
        ({"maxlen": 0}, "option 'maxlen': Input should be greater than 0 (got 0)"),
        ({"maxlen": True}, "option 'maxlen': expected a number, not true/false (got True)"),
        ({"maxlen": 2.5}, "option 'maxlen': Input should be a valid integer"),
        ({"index": "yes"}, "option 'index': Input should be a valid boolean (got 'yes')"),
        ({"index_prefix": ""}, "option 'index_prefix': String should have at least 1 character"),
        ({"index_ttl": 0}, "option 'index_ttl': Input should be greater than 0 (got 0)"),
        ({"timeout": -1}, "option 'timeout': Input should be greater than 0 (got -1)"),
    ],
)
def test_invalid_options_name_the_field_and_value(options: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as raised:
        announcer("redis", **options)
    assert message in str(raised.value)
    assert "s3cret" not in str(raised.value)


def test_unknown_option_is_refused_with_a_suggestion() -> None:
    with pytest.raises(ConfigError, match="unknown option 'streem'; did you mean 'stream'"):
        announcer("redis", streem="x")


def test_config_check_connect_reaches_the_server_and_fails_on_a_wrong_port(
    redis_url: str, closed_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = assert_connect_tells_right_from_wrong(
        monkeypatch,
        {"use": "redis", "url": redis_url},
        {"use": "redis", "url": f"redis://:s3cret@127.0.0.1:{closed_port}/0", "timeout": 2},
    )
    assert "s3cret" not in "\n".join(lines)
