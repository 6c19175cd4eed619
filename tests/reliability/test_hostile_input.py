"""Hostile input: malformed, huge, deeply nested and wrongly typed messages; unsafe configuration.

Whatever arrives, agent-wait answers with an error that names the field (or the entry) and
the value, never with a traceback, and a refused message changes nothing: no run, no answer
saved, nothing published.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_wait.core import (
    ENVELOPE_LIMIT,
    AnnounceFailed,
    ConfigError,
    MemoryAnnounce,
    PluginNotFoundError,
    Question,
    QuestionTooLarge,
    WaitPolicy,
    announcer,
    announcers_from_config,
    build_envelope,
    parse_message,
    publish,
)
from agent_wait.core._plugins import registry
from agent_wait.host._cli import build_parser, main
from tests.aws_moto import Aws, create_queue, drain
from tests.reliability.agents import LangGraphHost, Ledger, PydanticAiHost, StrandsHost, ThreadHost

AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))
EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "schema" / "examples"
ENVELOPE: dict[str, Any] = json.loads((EXAMPLES / "envelope.json").read_text(encoding="utf-8"))


def nested(depth: int, leaf: Any = "x") -> Any:
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_text(depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth


# --- agent-wait validate -----------------------------------------------------------------------

# (id, file content, extra arguments, what stderr must say)
VALIDATE_CASES: list[tuple[str, bytes, list[str], list[str]]] = [
    ("truncated", b'{"thread_id": "t",', [], ["not valid JSON"]),
    ("empty", b"", [], ["not valid JSON"]),
    ("not-utf8", b'{"thread_id": "\xff\xfe"}', [], ["not valid JSON"]),
    ("nan", b'{"thread_id": "t", "input": NaN}', [], ["not valid JSON"]),
    ("array", b'[{"thread_id": "t"}]', [], ["expected a JSON object", "list"]),
    ("string", b'"wait.created"', [], ["expected a JSON object", "str"]),
    (
        "deeply-nested-answer",
        f'{{"thread_id": "t", "question_id": "q", "answer": {nested_text(5000)}}}'.encode(),
        [],
        ["not valid JSON", "recursion limit"],
    ),
    (
        "over-max-bytes",
        b'{"thread_id": "' + b"t" * 5000 + b'"}',
        ["--max-bytes", "1000"],
        ["larger than 1000 bytes"],
    ),
    (
        "oversize-envelope",
        json.dumps({**ENVELOPE, "question": {"blob": "x" * (ENVELOPE_LIMIT + 10)}}).encode(),
        [],
        ["invalid envelope", f"over the {ENVELOPE_LIMIT}-byte limit"],
    ),
    (
        "wrongly-typed-envelope",
        json.dumps(
            {
                **ENVELOPE,
                "event_id": "not-a-ulid",
                "thread_id": 4471,
                "allowed_actions": "approve",
                "expires_at": "tomorrow",
                "answer_ttl": "P1M",
                "tags": {"approver_group": 7},
                "reply_with": {**ENVELOPE["reply_with"], "answer": {"action": "approve"}},
                "unexpected": True,
            }
        ).encode(),
        [],
        [
            "event_id",
            "thread_id",
            "allowed_actions",
            "expires_at",
            "answer_ttl",
            "tags.approver_group",
            "reply_with.answer",
            "unexpected",
        ],
    ),
    (
        "reply-with-another-question",
        json.dumps(
            {**ENVELOPE, "reply_with": {**ENVELOPE["reply_with"], "question_id": "other"}}
        ).encode(),
        [],
        ["reply_with", "'other'"],
    ),
    (
        "wrongly-typed-answer",
        b'{"thread_id": "", "question_id": ["q"], "valid_until": "soon"}',
        [],
        ["thread_id", "question_id", "answer", "valid_until"],
    ),
    ("start-without-thread", b'{"input": {"order_id": 1}}', [], ["thread_id"]),
    (
        "answer-as-envelope",
        b'{"thread_id": "t"}',
        ["--kind", "envelope"],
        ["invalid envelope", "event_id"],
    ),
]


@pytest.mark.parametrize(
    ("content", "extra", "expected"),
    [pytest.param(c, e, x, id=i) for i, c, e, x in VALIDATE_CASES],
)
def test_validate_in_process_gives_field_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: bytes,
    extra: list[str],
    expected: list[str],
) -> None:
    path = tmp_path / "message.json"
    path.write_bytes(content)
    code = main(["validate", str(path), *extra])
    out, err = capsys.readouterr()
    assert code == 1
    assert out == ""
    assert err.startswith("agent-wait: ")
    assert "Traceback" not in err
    for text in expected:
        assert text in err, f"{text!r} missing from:\n{err}"
    # Errors quote values in short form: a huge value never floods the terminal.
    assert len(err) < 8000


@pytest.mark.parametrize(
    ("content", "extra", "expected"),
    [
        pytest.param(c, e, x, id=i)
        for i, c, e, x in VALIDATE_CASES
        if i in ("not-utf8", "deeply-nested-answer", "oversize-envelope", "wrongly-typed-envelope")
    ],
)
def test_validate_as_a_command_gives_field_errors(
    content: bytes, extra: list[str], expected: list[str]
) -> None:
    # Through stdin of the installed console script, as a shell pipeline would run it.
    done = subprocess.run(
        [AGENT_WAIT, "validate", "-", *extra],
        input=content,
        capture_output=True,
        timeout=60,
        check=False,
    )
    err = done.stderr.decode()
    assert done.returncode == 1
    assert "Traceback" not in err
    for text in expected:
        assert text in err, f"{text!r} missing from:\n{err}"


def test_validate_a_huge_stream_reads_only_what_it_may(tmp_path: Path) -> None:
    # 64 MiB of JSON on stdin with the default 16 MiB limit: refused without reading it all.
    chunk = b"[" + b'"x",' * (16 * 1024 * 1024) + b'"x"]'
    done = subprocess.run(
        [AGENT_WAIT, "validate", "-"], input=chunk, capture_output=True, timeout=120, check=False
    )
    assert done.returncode == 1
    assert b"larger than 16777216 bytes" in done.stderr
    assert b"Traceback" not in done.stderr


# --- inbound messages to the framework hosts ---------------------------------------------------


@pytest.fixture(params=["langgraph", "pydantic_ai", "strands"])
def parked(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[ThreadHost, Ledger, str, str]]:
    ledger = Ledger()
    hosts = {
        "langgraph": lambda: LangGraphHost(ledger),
        "pydantic_ai": lambda: PydanticAiHost(ledger),
        "strands": lambda: StrandsHost(ledger, tmp_path / "sessions"),
    }
    host = hosts[request.param]()
    thread_id = f"{host.framework}-0001"
    started = host.handle(
        {"thread_id": thread_id, "input": {"order_id": thread_id, "amount": 41000}},
        MemoryAnnounce(),
    )
    [question_id] = started.question_ids
    return host, ledger, thread_id, question_id


MALFORMED = [
    pytest.param(
        lambda t, q: {"thread_id": 4471, "question_id": q, "answer": 1},
        "thread_id",
        id="thread-int",
    ),
    pytest.param(
        lambda t, q: {"thread_id": t, "question_id": "", "answer": 1}, "question_id", id="empty-id"
    ),
    pytest.param(
        lambda t, q: {"thread_id": t, "question_id": [q], "answer": 1}, "question_id", id="id-list"
    ),
    pytest.param(lambda t, q: {"thread_id": t, "question_id": q}, "answer", id="no-answer"),
    pytest.param(lambda t, q: {"question_id": q, "answer": 1}, "thread_id", id="no-thread"),
    pytest.param(
        lambda t, q: {"thread_id": t, "question_id": q, "answer": 1, "valid_until": "soon"},
        "valid_until",
        id="valid-until",
    ),
    pytest.param(
        lambda t, q: json.dumps({"thread_id": t, "question_id": q})[:-5],
        "json",
        id="truncated-json",
    ),
    pytest.param(
        lambda t, q: b"\xff" + json.dumps({"thread_id": t}).encode(), "json", id="not-utf8"
    ),
    pytest.param(lambda t, q: "[" * 5000 + "]" * 5000, "json", id="deep-json-text"),
    pytest.param(lambda t, q: ["thread_id", t], "dict", id="not-an-object"),
]


@pytest.mark.parametrize(("build", "field"), MALFORMED)
def test_malformed_messages_are_refused_naming_the_field_and_change_nothing(
    parked: tuple[ThreadHost, Ledger, str, str], build: Any, field: str
) -> None:
    host, ledger, thread_id, question_id = parked
    inbox = MemoryAnnounce()
    with pytest.raises(ValidationError) as refused:
        host.handle(build(thread_id, question_id), inbox)
    assert field in str(refused.value).lower()
    assert host.pending(thread_id) == {question_id}
    assert ledger.runs == []
    assert inbox.envelopes == []


@pytest.mark.parametrize(
    "answer",
    [
        pytest.param(nested(600), id="nested-600"),
        pytest.param(
            {"action": "approve", "note": nested(900, {"k": "v"})}, id="nested-900-in-object"
        ),
    ],
)
def test_deeply_nested_answers_are_refused_as_a_field_error(
    parked: tuple[ThreadHost, Ledger, str, str], answer: Any
) -> None:
    # A JSON text this deep is refused by the JSON parser (parse_message), so an already-parsed
    # dict of the same depth must be refused too, by the same field, before any framework
    # (checkpoint serialisers, canonical JSON) recurses into it.
    host, ledger, thread_id, question_id = parked
    message = {"thread_id": thread_id, "question_id": question_id, "answer": answer}
    with pytest.raises(ValidationError, match="answer"):
        host.handle(message, MemoryAnnounce())
    assert host.pending(thread_id) == {question_id}
    assert ledger.runs == []


def test_a_huge_answer_is_applied_verbatim(parked: tuple[ThreadHost, Ledger, str, str]) -> None:
    # Size is the transport's business (and the envelope's, on the way out); an answer that got
    # through is handed to the function unchanged. The refund gets a 4 MiB rejection reason.
    host, ledger, thread_id, question_id = parked
    reason = "r" * (4 * 1024 * 1024)
    answer = {"action": "reject", "reason": reason}
    handled = host.handle(
        {"thread_id": thread_id, "question_id": question_id, "answer": answer}, MemoryAnnounce()
    )
    assert handled.outcome.value == "resumed"
    assert ledger.count("issue_refund", thread_id) == 0
    assert len(handled.question_ids) == 1


def test_a_mistyped_answer_is_a_start_message_and_every_host_logs_a_warning(
    parked: tuple[ThreadHost, Ledger, str, str], caplog: pytest.LogCaptureFixture
) -> None:
    # Without question_id the contract makes it a start message: the parked thread's question
    # is republished and nothing is answered, but the host says why it probably was not meant.
    host, ledger, thread_id, question_id = parked
    message = {"thread_id": thread_id, "questionid": question_id, "answer": {"action": "approve"}}
    with caplog.at_level(logging.WARNING, logger="agent_wait"):
        handled = host.handle(message, MemoryAnnounce())
    assert handled.outcome.value == "republished"
    assert handled.question_ids == [question_id]
    assert ledger.runs == []
    warnings = [r.getMessage() for r in caplog.records if r.name == "agent_wait.messages"]
    assert len(warnings) == 2
    assert "'questionid'" in warnings[0]
    assert "did you mean question_id?" in warnings[0]
    assert thread_id in warnings[0]


@pytest.mark.parametrize(
    "message",
    [
        b"",
        b"null",
        b"[]",
        b'"x"',
        b"{}",
        b'{"question_id": null}',
        b'{"thread_id": {"a": 1}}',
        nested_text(300).encode(),
        b'{"thread_id": "t", "question_id": "q", "answer": 1e999}',
        b'{"thread_id": "t", "question_id": "q", "answer": NaN}',
        b'{"thread_id": "t", "question_id": "q", "answer": "\\ud800"}',
    ],
)
def test_parse_message_refuses_with_validation_errors_only(message: bytes) -> None:
    try:
        parsed = parse_message(message)
    except ValidationError as error:
        problems = error.errors()
    else:
        problems = None
        assert parsed.thread_id
    assert problems is None or problems  # a refusal names what is wrong


def test_framework_answer_helpers_name_the_field() -> None:
    from agent_wait.langgraph import resume_command
    from agent_wait.strands._host import interrupt_responses

    with pytest.raises(ValueError, match="question_id"):
        resume_command({"thread_id": "t", "input": 1})
    with pytest.raises(ValueError, match="question_id: 'not-an-interrupt-id'"):
        resume_command({"thread_id": "t", "question_id": "not-an-interrupt-id", "answer": 1})
    with pytest.raises(ValidationError, match="thread_id"):
        resume_command({"thread_id": ["t"], "question_id": "0" * 32, "answer": 1})
    with pytest.raises(ValueError, match=r"answers\[1\]\.question_id"):
        interrupt_responses({"question_id": "a", "answer": 1}, {"question_id": 5, "answer": 1})
    with pytest.raises(ValueError, match=r"answers\[0\]\.answer"):
        interrupt_responses({"question_id": "a", "answer": None})


# --- questions too large to send ---------------------------------------------------------------


def test_an_oversize_question_is_refused_at_ask_time_and_nothing_parks(
    parked: tuple[ThreadHost, Ledger, str, str],
) -> None:
    host, ledger, _, _ = parked
    thread_id = f"{host.framework}-huge"
    order_id = thread_id + "-" + "x" * ENVELOPE_LIMIT
    inbox = MemoryAnnounce()
    start = {"thread_id": thread_id, "input": {"order_id": order_id, "amount": 1}}
    if host.framework == "strands":
        # Strands turns a tool's exception into an error result for the model: the run goes on,
        # and the question was never asked.
        handled = host.handle(start, inbox)
        assert handled.question_ids == []
    else:
        with pytest.raises(QuestionTooLarge, match=f"over the {ENVELOPE_LIMIT}-byte limit"):
            host.handle(start, inbox)
    assert host.pending(thread_id) == set()
    assert inbox.envelopes == []
    assert ledger.runs == []


@pytest.mark.integration
def test_a_question_too_large_beside_its_long_thread_id_never_parks(aws: Aws) -> None:
    # The envelope carries the thread id twice. With a 1,000-character thread id this question
    # is a few hundred bytes over SNS's limit; refused when asked, nothing parks, so no strict
    # redelivery can meet the same failure again. Beside a short thread id it is delivered.
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic = sns.create_topic(Name="approvals")["TopicArn"]
    queue_url, queue_arn = create_queue(sqs, "approvals-raw")
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    ledger = Ledger()
    host = LangGraphHost(ledger)
    long_thread, short_thread = "t" * 1000, "order-4471"
    order = {"order_id": "o" * (ENVELOPE_LIMIT - 2300), "amount": 1}
    with announcer("sns", topic_arn=topic, **aws.options) as sns_announce:
        with pytest.raises(QuestionTooLarge) as refused:
            host.handle({"thread_id": long_thread, "input": order}, sns_announce)
        assert host.pending(long_thread) == set()
        handled = host.handle({"thread_id": short_thread, "input": order}, sns_announce)
    message = str(refused.value)
    assert f"over the {ENVELOPE_LIMIT}-byte limit of the SNS announcer" in message
    assert "is 1000 characters" in message
    assert refused.value.size > ENVELOPE_LIMIT
    assert ledger.runs == []
    [delivered] = drain(sqs, queue_url)
    assert json.loads(delivered["Body"])["thread_id"] == short_thread
    assert host.pending(short_thread) == set(handled.question_ids)


def test_an_oversize_bare_question_is_a_reported_failure_not_a_crash() -> None:
    inbox = MemoryAnnounce()
    big = Question(question_id="q-big", question={"blob": "x" * ENVELOPE_LIMIT})
    small = Question(question_id="q-small", question={"blob": "x"})
    report = publish([big, small], "t", inbox)
    assert [d.question_id for d in report.failures] == ["q-big"]
    assert isinstance(report.failures[0].exception, QuestionTooLarge)
    assert inbox.question_ids == ["q-small"]
    with pytest.raises(AnnounceFailed, match="QuestionTooLarge"):
        publish([big], "t", inbox, strict=True)


# --- tags AWS would refuse ---------------------------------------------------------------------

UNSENDABLE_TAGS = {
    "AWS.reserved": "x",
    "Amazon.reserved": "x",
    "has space": "x",
    "dots..twice": "x",
    ".leading": "x",
    "trailing.": "x",
    "n" * 257: "x",
    "empty_value": "",
    "ünïcode": "x",
}
SENDABLE_TAGS = {f"t{i}": f"v{i}" for i in range(12)}


@pytest.mark.integration
def test_tags_sns_would_refuse_are_left_out_before_sending(
    aws: Aws, caplog: pytest.LogCaptureFixture
) -> None:
    sns, sqs = aws.client("sns"), aws.client("sqs")
    topic = sns.create_topic(Name="approvals")["TopicArn"]
    queue_url, queue_arn = create_queue(sqs, "approvals-raw")
    sns.subscribe(
        TopicArn=topic,
        Protocol="sqs",
        Endpoint=queue_arn,
        Attributes={"RawMessageDelivery": "true"},
    )
    policy = WaitPolicy(tags={**UNSENDABLE_TAGS, **SENDABLE_TAGS})
    question = Question(question_id="q-tags", question={"function": "f", "args": {}}, policy=policy)
    with announcer("sns", topic_arn=topic, **aws.options) as sns_announce:
        report = publish([question], "thread-1", sns_announce, strict=True)
    assert report.ok
    [message] = drain(sqs, queue_url)
    attributes = message["MessageAttributes"]
    # type and thread_id, then the valid tags in name order, up to SNS's 10 attributes.
    assert set(attributes) == {"type", "thread_id", *sorted(SENDABLE_TAGS)[:8]}
    # The envelope itself is untouched: every tag is in the body.
    assert json.loads(message["Body"])["tags"] == policy.tags
    assert any("q-tags" in r.getMessage() for r in caplog.records if r.levelname == "WARNING")


@pytest.mark.integration
def test_dynamodb_rows_keep_every_tag_and_refuse_numbers_dynamodb_cannot_store(aws: Aws) -> None:
    from agent_wait.dynamodb import DynamoDbAnnounce, create_table

    client = aws.client("dynamodb")
    create_table(client, "approvals")
    policy = WaitPolicy(tags={**UNSENDABLE_TAGS, **SENDABLE_TAGS})
    fine = Question(question_id="q-fine", question={"amount": 0.1, "n": 2**60}, policy=policy)
    # 40 significant digits: DynamoDB numbers hold 38.
    too_precise = Question(question_id="q-digits", question={"n": 10**39 + 1}, policy=policy)
    with DynamoDbAnnounce("approvals", **aws.options) as table:
        report = publish([too_precise, fine], "thread-1", table)
    assert [d.question_id for d in report.failures] == ["q-digits"]
    item = client.get_item(
        TableName="approvals", Key={"pk": {"S": "THREAD#thread-1"}, "sk": {"S": "WAIT#q-fine"}}
    )["Item"]
    assert {k: v["S"] for k, v in item["tags"]["M"].items()} == policy.tags
    assert item["question"]["M"]["amount"] == {"N": "0.1"}


# --- configuration can only name installed announcers ------------------------------------------

UNSAFE_NAMES = [
    "os:system",
    "os.system",
    "../../evil",
    "agent_wait.core._memory:MemoryAnnounce",
    "subprocess:run",
    "/tmp/evil.py",
    "sqlite; rm -rf /",
    "",
]


@pytest.fixture
def trap(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """os.system and subprocess that record any call, and the modules present before."""
    called: list[str] = []
    monkeypatch.setattr(os, "system", lambda command: called.append(f"os.system({command!r})"))
    registry()  # entry points load once; after this nothing new may be imported
    import agent_wait.core._config  # noqa: F401 - publish(announce=None) imports it lazily

    build_parser()  # the CLI's own commands (the plugins' included) load once, whatever ran first

    before = set(sys.modules)
    yield called
    assert set(sys.modules) - before == set(), "configuration imported a module"
    assert called == []


@pytest.mark.parametrize("name", UNSAFE_NAMES)
def test_config_never_imports_a_path(name: str, trap: list[str], tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"not a plain name|must name an announcer|never a module"
    ):
        announcer(name)
    with pytest.raises(ConfigError, match=r"announce\[0\]"):
        announcers_from_config([{"use": name}])
    with pytest.raises(ConfigError):
        publish([Question(question_id="q", question=1)], "t", name)


@pytest.mark.parametrize("name", ["os:system", "../../evil"])
def test_config_files_and_environment_never_import_a_path(
    name: str, trap: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    question = [Question(question_id="q", question=1)]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([{"use": name, "command": "id"}]))
    with pytest.raises(ConfigError, match=f"AGENT_WAIT_ANNOUNCE: announce\\[0\\]: use = {name!r}"):
        publish(question, "t")
    monkeypatch.delenv("AGENT_WAIT_ANNOUNCE")
    (tmp_path / "agent-wait.toml").write_text(f'[[announce]]\nuse = "{name}"\n', encoding="utf-8")
    with pytest.raises(ConfigError, match="never a module path"):
        publish(question, "t")
    code = main(["config", "check"])
    assert code == 1


def test_config_naming_an_uninstalled_announcer_lists_what_is_installed(
    trap: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "agent-wait.toml").write_text('[[announce]]\nuse = "kafka"\n', encoding="utf-8")
    with pytest.raises(
        PluginNotFoundError, match=r"unknown announcer 'kafka'; installed: .*sqlite"
    ):
        publish([Question(question_id="q", question=1)], "t")
    assert main(["config", "check"]) == 1
    out, err = capsys.readouterr()
    assert "unknown announcer 'kafka'" in out + err
    assert "Traceback" not in out + err
    with pytest.raises(PluginNotFoundError, match="did you mean 'sqs'"):
        announcer("sqss")


def test_envelopes_built_for_hostile_questions_stay_valid() -> None:
    # Control characters, quotes and markup in every free-text field round-trip as data.
    nasty = '"\n\r\t\x00\x1f</script><img src=x onerror=alert(1)>\u2028\u2029'
    policy = WaitPolicy(tags={"group": nasty}, default={"reason": nasty}, allowed_actions=(nasty,))
    envelope = build_envelope(
        Question(question_id=nasty, question={nasty: nasty}, policy=policy), thread_id=nasty
    )
    parsed = json.loads(envelope.to_json())
    assert parsed["question"] == {nasty: nasty}
    assert parsed["reply_with"] == {"thread_id": nasty, "question_id": nasty, "answer": None}
