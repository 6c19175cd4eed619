"""The agent-wait command: plugins, schema, validate, config check, inbox."""

from __future__ import annotations

import io
import json
import logging
import subprocess
import sys
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_wait.core import (
    BaseAnnounce,
    CallContext,
    ContextMessage,
    Question,
    WaitPolicy,
    hookimpl,
    publish,
    started_by,
)
from agent_wait.core._sqlite import SqliteAnnounce
from agent_wait.core.hookspecs import RegisterTarget
from agent_wait.host._answering import default_approver
from agent_wait.host._cli import main, schema_text
from agent_wait.testing import registered_plugin, sample_questions
from tests.core._installed import needs_example_plugin

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "schema" / "examples"
DOC_ENVELOPE: dict[str, Any] = json.loads((EXAMPLES / "envelope.json").read_text(encoding="utf-8"))


def run(*argv: str, stdin: bytes | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    old_stdin = sys.stdin
    if stdin is not None:
        sys.stdin = io.TextIOWrapper(io.BytesIO(stdin))
    try:
        with redirect_stdout(out), redirect_stderr(err):
            code = main(list(argv))
    finally:
        sys.stdin = old_stdin
    return code, out.getvalue(), err.getvalue()


def write_json(path: Path, value: Any) -> str:
    path.write_text(json.dumps(value), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "command",
    [[], ["plugins"], ["schema"], ["validate"], ["config"], ["config", "check"], ["inbox"]],
)
def test_help_everywhere(command: list[str]) -> None:
    code, out, _ = run(*command, "--help")
    assert code == 0
    assert out.startswith("usage: agent-wait")
    assert len(out.splitlines()) > 4


def test_no_command_prints_help_and_succeeds() -> None:
    code, out, _ = run()
    assert code == 0
    assert "plugins" in out
    assert "validate" in out


def test_usage_error_returns_2() -> None:
    code, _, err = run("schema", "nope")
    assert code == 2
    assert "invalid choice" in err


def test_version() -> None:
    from importlib.metadata import version

    assert run("--version")[:2] == (0, f"agent-wait-core {version('agent-wait-core')}\n")


def test_console_script_is_installed() -> None:
    script = Path(sys.executable).parent / "agent-wait"
    result = subprocess.run([str(script), "schema", "envelope"], capture_output=True, check=False)
    assert result.returncode == 0
    assert result.stdout.decode() == schema_text("envelope")


@needs_example_plugin
def test_plugins_text_lists_the_third_party_distribution() -> None:
    code, out, _ = run("plugins")
    assert code == 0
    line = next(line for line in out.splitlines() if line.strip().startswith("example_file"))
    assert "agent-wait-example-thirdparty 0.1.0" in line
    assert "adjust_envelope" in line
    assert "delivery_outcome" in line
    assert "Announcers:" in out
    assert any(row.split()[:2] == ["sqlite", "agent-wait-core"] for row in out.splitlines())


@needs_example_plugin
def test_plugins_json() -> None:
    code, out, _ = run("plugins", "--json")
    assert code == 0
    data = json.loads(out)
    plugins = {p["name"]: p for p in data["plugins"]}
    assert plugins["core"]["distribution"] == "agent-wait-core"
    assert plugins["core"]["version"]
    assert plugins["example_file"]["hooks"] == [
        "adjust_envelope",
        "delivery_outcome",
        "register_announcers",
    ]
    announcers = {a["name"]: a for a in data["announcers"]}
    schema = announcers["example_file"].pop("options_schema")
    assert announcers["example_file"] == {
        "name": "example_file",
        "plugin": "example_file",
        "distribution": "agent-wait-example-thirdparty",
        "version": "0.1.0",
        "target": "agent_wait_example._announcer:ExampleFileAnnounce",
    }
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["required"] == ["directory"]
    assert schema["additionalProperties"] is False
    assert (
        schema["properties"]["directory"]["description"]
        == "Where the files go; created when missing."
    )
    sqlite = announcers["sqlite"]["options_schema"]
    # lifecycle_events is core's, for the announcers that publish events.
    assert set(sqlite["properties"]) == {"path", "table", "timeout", "lifecycle_events"}
    assert "lifecycle_events" not in announcers["log"]["options_schema"]["properties"]
    assert sqlite["properties"]["timeout"]["exclusiveMinimum"] == 0
    assert {"memory", "log", "jsonl", "sqlite"} <= set(announcers)
    assert isinstance(data["adapters"], list)
    entry_points = {e["name"]: e for e in data["entry_points"]}
    assert entry_points["sqlite"]["plugin"] == "core"
    entry_schema = entry_points["sqlite"]["options_schema"]
    assert entry_schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert entry_schema["additionalProperties"] is False
    assert entry_schema["properties"]["max_attempts"]["exclusiveMinimum"] == 0
    assert entry_schema["properties"]["retry_delay"]["minimum"] == 0
    assert (
        entry_schema["properties"]["visibility_timeout"]["description"]
        == "Seconds a received message stays leased."
    )
    assert isinstance(data["failed"], list)


def test_schema_of_an_entry_points_options() -> None:
    code, out, _ = run("schema", "--entry", "sqlite")
    assert code == 0
    assert set(json.loads(out)["properties"]) == {
        "path",
        "table",
        "visibility_timeout",
        "max_attempts",
        "retry_delay",
        "poll_interval",
        "busy_poll_interval",
        "timeout",
    }
    code, out, err = run("schema", "--entry", "sqlit")
    assert (code, out) == (1, "")
    assert "unknown entry point 'sqlit'" in err


@pytest.mark.parametrize("kind", ["envelope", "answer", "start"])
def test_schema(kind: str) -> None:
    code, out, _ = run("schema", kind)
    assert code == 0
    assert out == schema_text(kind)
    assert json.loads(out)["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_schema_defaults_to_envelope() -> None:
    assert run("schema")[1] == schema_text("envelope")


def test_validate_the_documented_messages(tmp_path: Path) -> None:
    code, out, err = run("validate", write_json(tmp_path / "e.json", DOC_ENVELOPE))
    assert (code, err) == (0, "")
    assert "valid envelope (wait.created:order-4471:a1b2c3d4e5f60718293a4b5c6d7e8f90" in out
    answer = {
        **DOC_ENVELOPE["reply_with"],
        "answer": {"action": "approve"},
        "valid_until": "2026-09-12T09:00:00Z",
    }
    code, out, _ = run("validate", write_json(tmp_path / "a.json", answer))
    assert code == 0
    assert "valid answer" in out
    start = {"thread_id": "order-4471", "input": {"order_id": "order-4471"}}
    code, out, _ = run("validate", "-", stdin=json.dumps(start).encode())
    assert code == 0
    assert out.startswith("<stdin>: valid start message")
    event = EXAMPLES / "lifecycle.json"
    code, out, err = run("validate", str(event))
    assert (code, err) == (0, "")
    assert (
        out
        == f"{event}: valid lifecycle event (wait.answered:order-4471:a1b2c3d4e5f60718293a4b5c6d7e8f90)\n"
    )
    late = {**json.loads(event.read_text()), "at": "yesterday"}
    code, _, err = run("validate", "-", stdin=json.dumps(late).encode())
    assert code == 1
    assert "invalid lifecycle: 1 error" in err
    assert "at: Value error, 'yesterday' is not an RFC 3339 timestamp" in err


MISTYPED_ANSWER = {"thread_id": "t-1", "questionid": "q-1", "answer": {"action": "approve"}}


def test_validate_warns_about_a_start_message_that_looks_like_an_answer() -> None:
    data = json.dumps(MISTYPED_ANSWER).encode()
    code, out, err = run("validate", "-", stdin=data)
    assert code == 0
    assert out == "<stdin>: valid start message (thread t-1)\n"
    assert err.splitlines() == [
        "agent-wait: <stdin>: warning: start message has key 'questionid', not 'question_id': it "
        "starts or republishes the thread instead of answering; did you mean question_id?",
        "agent-wait: <stdin>: warning: start message carries 'answer' but no 'question_id': it "
        "starts or republishes the thread instead of answering; did you mean to send question_id?",
    ]
    code, out, err = run("validate", "--strict", "-", stdin=data)
    assert (code, out) == (1, "")
    assert err.endswith("agent-wait: <stdin>: refused under --strict: 2 warning(s)\n")
    # A clean start message passes --strict.
    clean = json.dumps({"thread_id": "t-1", "input": {"question": "refund?"}}).encode()
    assert run("validate", "--strict", "-", stdin=clean)[:2] == (
        0,
        "<stdin>: valid start message (thread t-1)\n",
    )


def test_validate_reports_field_level_errors(tmp_path: Path) -> None:
    bad = {
        **DOC_ENVELOPE,
        "event_id": "not-a-ulid",
        "expires_at": "tomorrow",
        "allowed_actions": "approve",
        "extra_field": 1,
    }
    del bad["tags"]
    code, out, err = run("validate", write_json(tmp_path / "e.json", bad))
    assert code == 1
    assert out == ""
    assert "invalid envelope: 5 errors" in err
    for fragment in (
        "event_id: String should match pattern",
        "(got 'not-a-ulid')",
        "expires_at: Value error, 'tomorrow' is not an RFC 3339 timestamp",
        "allowed_actions: Input should be a valid list",
        "tags: Field required",
        "extra_field: Extra inputs are not permitted",
    ):
        assert fragment in err
    assert "Traceback" not in err


def test_validate_nested_location_and_kind_override(tmp_path: Path) -> None:
    bad = {**DOC_ENVELOPE, "reply_with": {**DOC_ENVELOPE["reply_with"], "question_id": ""}}
    code, _, err = run("validate", write_json(tmp_path / "e.json", bad))
    assert code == 1
    assert "reply_with.question_id: String should have at least 1 character" in err
    code, _, err = run(
        "validate", "--kind", "answer", write_json(tmp_path / "s.json", {"thread_id": "t"})
    )
    assert code == 1
    assert "question_id: Field required" in err
    code, _, err = run(
        "validate",
        write_json(
            tmp_path / "x.json", {"thread_id": "t", "allowed_actions": [1] * 50, "event_id": "x"}
        ),
    )
    assert code == 1
    assert "... and" in err


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b'{"a": ', "not valid JSON: EOF while parsing"),
        (b'{"a": 1,}', "trailing comma at line 1 column 9"),
        (b"\xff\xfe\x00", "not valid JSON"),
        (b"", "not valid JSON"),
        (b"[1, 2]", "expected a JSON object, got list"),
        (b'"text"', "expected a JSON object, got str"),
        (b'{"thread_id": NaN}', "not valid JSON"),
        (b"[" * 100_000, "recursion limit exceeded"),
        (b'{"q":' * 50_000 + b"1" + b"}" * 50_000, "recursion limit exceeded"),
    ],
)
def test_validate_malformed_input_never_tracebacks(data: bytes, message: str) -> None:
    code, out, err = run("validate", "-", stdin=data)
    assert code == 1
    assert out == ""
    assert message in err
    assert "Traceback" not in err


def test_validate_deep_but_reasonable_nesting_is_fine(tmp_path: Path) -> None:
    question: Any = "leaf"
    for _ in range(100):
        question = {"q": question}
    code, _, _ = run(
        "validate", write_json(tmp_path / "e.json", {**DOC_ENVELOPE, "question": question})
    )
    assert code == 0


def test_validate_size_limits(tmp_path: Path) -> None:
    big = {**DOC_ENVELOPE, "question": {"blob": "x" * 300_000}}
    code, _, err = run("validate", write_json(tmp_path / "e.json", big))
    assert code == 1
    assert "over the 262144-byte limit" in err
    code, _, err = run(
        "validate", "--max-bytes", "100", write_json(tmp_path / "e2.json", DOC_ENVELOPE)
    )
    assert code == 1
    assert "larger than 100 bytes" in err
    assert run("validate", "--max-bytes", "0", "-")[0] == 2


def test_validate_unreadable_file(tmp_path: Path) -> None:
    code, _, err = run("validate", str(tmp_path / "missing.json"))
    assert code == 1
    assert "cannot read" in err
    code, _, err = run("validate", str(tmp_path))
    assert code == 1
    assert "cannot read" in err


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=12), children, max_size=5)
    ),
    max_leaves=30,
)
message_like = st.fixed_dictionaries(
    {},
    optional=dict.fromkeys([*DOC_ENVELOPE, "answer", "valid_until", "input"], json_values),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.one_of(
        st.binary(max_size=200),
        json_values.map(lambda v: json.dumps(v).encode()),
        message_like.map(lambda v: json.dumps(v).encode()),
    )
)
def test_validate_any_input_exits_0_or_1(data: bytes) -> None:
    code, _, err = run("validate", "-", stdin=data)
    assert code in (0, 1)
    assert "Traceback" not in err


class Vault(BaseAnnounce):
    """An announcer whose construction fails with a message quoting its secret."""

    def __init__(self, url: str, api_key: str, headers: dict[str, str] | None = None) -> None:
        raise ValueError(f"cannot reach {url} with key {api_key} and headers {headers}")


class VaultPlugin:
    @hookimpl
    def register_announcers(self, register: RegisterTarget) -> None:
        register("vault", Vault)


@pytest.fixture
def vault() -> Iterator[None]:
    with registered_plugin(VaultPlugin(), "test-vault"):
        yield


def test_config_check_default(tmp_path: Path) -> None:
    code, out, _ = run("config", "check")
    assert code == 0
    assert "configuration: default (source: default)" in out
    assert str(tmp_path / "agent-wait-home" / "inbox.sqlite3") in out
    assert "ok: agent_wait.core._sqlite.SqliteAnnounce named 'sqlite'" in out
    assert '  entry {"use": "sqlite", "path": ' in out
    assert (
        "(source: default)\n    ok: agent_wait.core._sqlite_entry.SqliteEntry named 'sqlite'" in out
    )


def test_config_check_reports_a_bad_entry_table(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ENTRY_DB", "postgresql://app:s3cret@db/x")
    (tmp_path / "agent-wait.toml").write_text(
        '[[announce]]\nuse = "log"\n\n'
        '[entry]\nuse = "sqlite"\nmax_attemps = 3\npath_env = "ENTRY_DB"\n'
    )
    code, out, err = run("config", "check")
    assert code == 1
    assert "ok: agent_wait.core._memory.LogAnnounce" in out
    assert (
        f'  entry {{"use": "sqlite", "max_attemps": 3, "path_env": "ENTRY_DB"}} (source: {tmp_path / "agent-wait.toml"})'
        in out
    )
    assert (
        "error: ConfigError: entry point 'sqlite': unknown option 'max_attemps'; "
        "did you mean 'max_attempts'?" in out
    )
    assert "the entry point failed to build" in err
    assert "s3cret" not in out + err


@needs_example_plugin
def test_config_check_file(tmp_path: Path) -> None:
    (tmp_path / "agent-wait.toml").write_text(
        f'[[announce]]\nuse = "jsonl"\npath = "{tmp_path / "q.jsonl"}"\n\n'
        f'[[announce]]\nuse = "example_file"\ndirectory = "{tmp_path / "files"}"\n'
    )
    code, out, _ = run("config", "check")
    assert code == 0
    assert f"configuration: {tmp_path / 'agent-wait.toml'} (source: agent-wait.toml)" in out
    assert "ok: agent_wait_example._announcer.ExampleFileAnnounce named 'example_file'" in out


def test_config_check_redacts_secrets_and_reports_each_failure(
    vault: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VAULT_KEY", "env-held-key-value")
    entries = [
        {"use": "memory"},
        {
            "use": "vault",
            "url": "https://admin:pw-in-url@vault.local",
            "api_key": "literal-key-value",
        },
        {"use": "vault", "url": "https://vault.local", "api_key_env": "VAULT_KEY"},
        {"use": "memroy"},
    ]
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps(entries))
    code, out, err = run("config", "check")
    assert code == 1
    assert "3 of 4 announcers failed to build" in err
    for secret in ("pw-in-url", "literal-key-value", "env-held-key-value"):
        assert secret not in out + err
    assert '"api_key": "***"' in out
    assert '"api_key_env": "VAULT_KEY"' in out
    assert "https://admin:***@vault.local" in out
    assert "cannot reach https://vault.local with key ***" in out
    assert "did you mean 'memory'" in out
    assert "ok: agent_wait.core._memory.MemoryAnnounce" in out


# Each entry hides one secret in a place a URL, DSN or header map can carry it.
LEAKY_ENTRIES: list[tuple[dict[str, object], str, str]] = [
    (
        {"url": "redis://cache:6379/0?password=qpw-in-query", "api_key": "k"},
        "qpw-in-query",
        "redis://cache:6379/0?password=***",
    ),
    (
        {"url": "redis://user:p@ss-at-sign@cache", "api_key": "k"},
        "ss-at-sign",
        "redis://user:***@cache",
    ),
    (
        {"url": "https://hooks.example/in?access_token=tok-in-query&x=1", "api_key": "k"},
        "tok-in-query",
        "access_token=***&x=1",
    ),
    (
        {"url": "https://maps.example/api?key=key-in-query", "api_key": "k"},
        "key-in-query",
        "key=***",
    ),
    (
        {"url": "https://h.example/?token=token-in-query", "api_key": "k"},
        "token-in-query",
        "token=***",
    ),
    (
        {"url": "host=db port=5432 password=libpq-secret user=app", "api_key": "k"},
        "libpq-secret",
        "password=*** user=app",
    ),
    (
        {
            "url": "https://h.example",
            "api_key": "k",
            "headers": {"Cookie": "sid=cookie-secret", "Authorization": "Bearer auth-secret"},
        },
        "cookie-secret",
        '"Cookie": "***"',
    ),
]


@pytest.mark.parametrize(("options", "secret", "shown"), LEAKY_ENTRIES)
def test_config_check_never_prints_a_secret_in_a_url_dsn_or_header(
    vault: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    options: dict[str, object],
    secret: str,
    shown: str,
) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", json.dumps([{"use": "vault", **options}]))
    with caplog.at_level(logging.DEBUG, logger="agent_wait"):
        code, out, err = run("config", "check")
    assert code == 1  # Vault always fails, quoting what it was given
    assert shown in out
    for text in (out, err, caplog.text):
        assert secret not in text
        assert "auth-secret" not in text


def test_config_check_malformed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_WAIT_ANNOUNCE", "[{")
    code, out, err = run("config", "check")
    assert code == 1
    assert out == ""
    assert "configuration error: AGENT_WAIT_ANNOUNCE: invalid JSON at line 1 column 3" in err


def test_config_requires_a_subcommand() -> None:
    assert run("config")[0] == 2


def _inbox(path: Path) -> None:
    clock_questions = [
        Question(
            question_id="overdue", question=1, policy=WaitPolicy.model_validate({"timeout": "PT1H"})
        ),
        Question(
            question_id="later", question=2, policy=WaitPolicy.model_validate({"timeout": "P30D"})
        ),
        *sample_questions(1, prefix="plain"),
    ]
    from datetime import UTC, datetime

    publish(
        clock_questions,
        "order-1",
        SqliteAnnounce(path),
        clock=lambda: datetime(2026, 1, 1, tzinfo=UTC),
        strict=True,
    )


def test_inbox(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    _inbox(path)
    code, out, _ = run("inbox", "--path", str(path), "--now", "2026-01-01T00:00:00Z")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["QUESTION_ID", "THREAD_ID", "ACTIONS", "DEADLINE", "CALL"]
    assert [line.split()[0] for line in lines[1:]] == ["overdue", "plain-0", "later"]
    # The deadline in words, measured from --now; the call as the web list shows it.
    assert lines[1].split()[:3] == ["overdue", "order-1", "approve,reject"]
    assert "in 1 h (01:00 UTC)" in lines[1]
    assert lines[1].endswith("  1")  # a question that is a bare number, as it is
    assert "in 30 d (Jan 31, 00:00 UTC)" in lines[3]
    code, out, _ = run("inbox", "--path", str(path), "--overdue", "--now", "2026-01-02T00:00:00Z")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()[1:]] == ["overdue"]
    assert "23 h overdue (Jan 1, 01:00 UTC)" in out
    code, out, _ = run("inbox", "--path", str(path), "--json")
    items = json.loads(out)
    assert [i["status"] for i in items] == ["open"] * 3
    assert items[0]["envelope"]["question_id"] == "overdue"
    code, out, _ = run("inbox", "--path", str(path), "--overdue", "--now", "2025-01-01T00:00:00Z")
    assert (code, out) == (0, "no overdue open questions\n")


def test_inbox_columns_stay_apart_when_every_source_is_empty(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    question = Question(question_id="bare", question="ok?")
    assert publish([question], "t", SqliteAnnounce(path=str(path))).ok
    code, out, _ = run("inbox", "--path", str(path))
    assert code == 0
    header, row = out.splitlines()
    assert header.split() == ["QUESTION_ID", "THREAD_ID", "ACTIONS", "DEADLINE", "CALL"]
    assert row.split()[:3] == ["bare", "t", "approve,reject"]
    assert row.endswith("no deadline  ok?")


def test_inbox_shows_the_call_with_its_arguments(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    question = Question(
        question_id="big",
        question={"function": "issue_refund", "args": {"order_id": "order-4471", "amount": 125000}},
    )
    assert publish([question], "order-4471", SqliteAnnounce(path=str(path))).ok
    code, out, _ = run("inbox", "--path", str(path))
    assert code == 0
    assert out.splitlines()[1].endswith("issue_refund(order_id=order-4471, amount=125,000)")


def test_inbox_and_show_say_who_asked_and_show_the_shared_conversation(tmp_path: Path) -> None:
    path = tmp_path / "inbox.sqlite3"
    context = CallContext(
        tool="send_voucher",
        framework="pydantic_ai",
        agent="support",
        messages=[
            ContextMessage(role="user", text="My vase broke.\nCan I get something back?"),
            ContextMessage(role="assistant", text="A 25 EUR voucher, then."),
        ],
    )
    asked = Question(question_id="voucher", question={"function": "send_voucher"}, context=context)
    with started_by("carol"):
        assert publish([asked], "order-4471", SqliteAnnounce(path=str(path))).ok
    assert publish([Question(question_id="bare", question="ok?")], "t", SqliteAnnounce(path)).ok
    code, out, _ = run("inbox", "--path", str(path))
    assert code == 0
    lines = out.splitlines()
    # Below its row, indented: who asked. A question that tells nothing has no such line.
    voucher = next(i for i, line in enumerate(lines) if line.startswith("voucher "))
    assert lines[voucher + 1] == (
        "  asked by agent support (Pydantic AI) · tool send_voucher · started by carol"
    )
    assert not any(line.startswith("  ") for line in lines[1:] if line is not lines[voucher + 1])
    code, out, _ = run("show", "voucher", "--path", str(path))
    assert code == 0
    assert "asked by: agent support (Pydantic AI) · tool send_voucher · started by carol" in out
    # The conversation's messages, one line each.
    assert out.split("last messages:\n", 1)[1].splitlines()[:2] == [
        "  user: My vase broke. Can I get something back?",
        "  assistant: A 25 EUR voucher, then.",
    ]
    code, out, _ = run("show", "bare", "--path", str(path))
    assert "asked by" not in out
    assert "last messages" not in out


def test_a_unique_id_prefix_names_the_question_and_an_ambiguous_one_is_refused(
    tmp_path: Path,
) -> None:
    path = tmp_path / "inbox.sqlite3"
    ids = ["0a31e2c3ec0e462b535904be2378fa53", "0a31e2c3ffff462b535904be2378fa53"]
    ids.append("7f3e5d2c1b0a99887f3e5d2c1b0a9988")
    questions = [Question(question_id=i, question=i[:4]) for i in ids]
    assert publish(questions, "order-1", SqliteAnnounce(path=str(path))).ok
    code, out, err = run("show", ids[2][:8], "--path", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(f"{ids[2]} (thread order-1) ")
    code, _, err = run("show", ids[0][:8], "--path", str(path))
    assert code == 1
    assert f"0a31e2c3 starts several question ids ({ids[0]}, {ids[1]})" in err
    code, out, _ = run("show", ids[0][:10], "--path", str(path))
    assert (code, out.split()[0]) == (0, ids[0])
    # Fewer than 8 characters is no prefix: looked up as the whole id, and not found.
    code, _, err = run("show", ids[2][:7], "--path", str(path))
    assert code == 1
    assert "no question 7f3e5d2" in err
    code, out, err = run("answer", ids[2][:12], "approve", "--path", str(path))
    assert (code, err) == (0, "")
    assert out.startswith(f"{ids[2]} (thread order-1) answered by {default_approver()}")


def test_inbox_default_path_and_errors(tmp_path: Path) -> None:
    code, out, err = run("inbox")
    assert (code, err) == (0, "")
    assert out == (
        f"no questions yet (no inbox at {tmp_path / 'agent-wait-home' / 'inbox.sqlite3'}; "
        "see --path)\n"
    )
    assert run("inbox", "--json") == (0, "[]\n", "")
    assert not (tmp_path / "agent-wait-home").exists()  # reading never creates the inbox
    code, _, err = run("inbox", "--path", str(tmp_path))
    assert code == 1
    assert f"{tmp_path}: not a file" in err
    _inbox(tmp_path / "agent-wait-home" / "inbox.sqlite3")
    assert len(run("inbox")[1].splitlines()) == 4
    code, _, err = run("inbox", "--overdue", "--now", "yesterday")
    assert code == 1
    assert "yesterday" in err
    (tmp_path / "junk.sqlite3").write_bytes(b"this is not a database" * 100)
    code, _, err = run("inbox", "--path", str(tmp_path / "junk.sqlite3"))
    assert code == 1
    assert "cannot read the inbox" in err
    assert "Traceback" not in err
