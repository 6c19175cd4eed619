"""Who may answer: approvers, approver groups, the approvers hook and separation of duties.

Through the real answer paths: ``answer()``/``answer_many()`` on a sqlite inbox with its entry
point, and ``agent-wait answer`` in a subprocess.
"""

from __future__ import annotations

import getpass
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agent_wait.core import (
    Answer,
    ConfigError,
    Identity,
    NotAnApprover,
    Question,
    SqliteAnnounce,
    SqliteAuditLog,
    SqliteEntry,
    SqliteQuestionStore,
    StartMessage,
    WaitEnvelope,
    WaitPolicy,
    hookimpl,
    message_warnings,
    parse_message,
    publish,
    started_by,
)
from agent_wait.core._identity import IDENTITY_SOURCES
from agent_wait.host import (
    AnswerResult,
    answer,
    answer_many,
    cancel,
    load_approver_config,
    may_answer,
    sweep,
)
from agent_wait.testing import registered_plugin
from tests.serving import all_sent

CLI = [sys.executable, "-m", "agent_wait.host._cli"]
ALICE = Identity(subject="alice@example.com", source="oidc")
BOB = Identity(subject="bob@example.com", source="oidc")


def ask(path: Path, question_id: str = "q1", *, thread_id: str = "t1", **policy: Any) -> None:
    publish(
        [Question(question_id=question_id, question={"n": 1}, policy=WaitPolicy(**policy))],
        thread_id,
        SqliteAnnounce(path),
        strict=True,
    )


@pytest.fixture
def inbox(tmp_path: Path) -> Path:
    return tmp_path / "inbox.db"


def respond(path: Path, question_id: str, **who: Any) -> AnswerResult:
    """``answer()`` on the inbox at ``path``, sending to its entry point."""
    return answer(
        question_id, "approve", store=SqliteQuestionStore(path), entry=SqliteEntry(path), **who
    )


def status(path: Path, question_id: str = "q1") -> str:
    with SqliteQuestionStore(path) as store:
        [question] = store.find(question_id)
        return question.status


def configure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, approvers: str) -> Path:
    config = tmp_path / "agent-wait.toml"
    config.write_text(
        f'[[announce]]\nuse = "sqlite"\npath = "{tmp_path / "inbox.db"}"\n\n'
        f'[entry]\nuse = "sqlite"\npath = "{tmp_path / "inbox.db"}"\n\n{approvers}',
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    return config


def test_a_person_not_among_the_approvers_is_refused_before_anything_is_recorded(
    inbox: Path,
) -> None:
    ask(inbox, approvers=["alice@example.com"])
    with pytest.raises(NotAnApprover) as refused:
        respond(inbox, "q1", identity=BOB)
    assert str(refused.value) == (
        "question q1 (thread t1): bob@example.com (oidc) may not answer it: its approvers are "
        "alice@example.com; nothing recorded or sent"
    )
    assert isinstance(refused.value, PermissionError)
    assert status(inbox) == "open"
    assert all_sent(inbox) == []
    # The approver goes through; the message says who and how they were established.
    result = respond(inbox, "q1", identity=ALICE)
    assert result.question.answered_by == "alice@example.com"
    [sent] = all_sent(inbox)
    assert (sent["answered_by"], sent["identity_source"]) == ("alice@example.com", "oidc")


def test_a_name_given_as_by_is_a_claim_and_is_checked_like_any_other(inbox: Path) -> None:
    ask(inbox, approvers=["alice@example.com"])
    with pytest.raises(NotAnApprover, match=r"mallory \(claimed\) may not answer it"):
        respond(inbox, "q1", by="mallory")
    respond(inbox, "q1", by="Alice@Example.com")
    [sent] = all_sent(inbox)
    assert sent["identity_source"] == "claimed"
    with pytest.raises(ValueError, match="by: 'bob' is not the identity's subject"):
        answer("q1", "approve", by="bob", identity=ALICE)


def test_groups_come_from_the_identity_and_from_the_configuration(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask(inbox, "q1", approvers=["group:finance"])
    ask(inbox, "q2", approvers=["group:finance"])
    ask(inbox, "q3", approvers=["group:finance"])
    # A group the IdP vouches for.
    respond(inbox, "q1", identity=BOB.with_groups(["finance"]))
    # Not in the group: refused, naming the group.
    with pytest.raises(NotAnApprover, match="its approvers are group:finance"):
        respond(inbox, "q2", identity=BOB)
    # The configuration lists its members.
    configure(tmp_path, monkeypatch, '[approvers.groups]\nfinance = ["bob@example.com"]\n')
    respond(inbox, "q2", identity=BOB)
    with pytest.raises(NotAnApprover):
        respond(inbox, "q3", identity=ALICE)
    assert [m["question_id"] for m in all_sent(inbox)] == ["q1", "q2"]


def test_the_approver_group_tag_restricts_once_approvers_are_configured(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ask(inbox, "q1", tags={"approver_group": "finance"})
    ask(inbox, "q2", tags={"approver_group": "finance"})
    # Without an [approvers] table the tag is a routing hint, as it always was.
    respond(inbox, "q1", identity=BOB)
    configure(tmp_path, monkeypatch, '[approvers.groups]\nfinance = ["alice@example.com"]\n')
    with pytest.raises(NotAnApprover, match="its approvers are group:finance"):
        respond(inbox, "q2", identity=BOB)
    respond(inbox, "q2", identity=ALICE)


def test_an_escalated_question_admits_the_escalation_group_too(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(
        tmp_path,
        monkeypatch,
        '[approvers.groups]\nfinance = ["alice@example.com"]\nleads = ["carol@example.com"]\n',
    )
    carol = Identity(subject="carol@example.com", source="oidc")
    escalate = {"after": 60, "to": {"approver_group": "leads"}}
    ask(inbox, "q1", tags={"approver_group": "finance"}, escalate=escalate)
    # Escalating an open question never narrows it: nothing named, anyone still answers.
    ask(inbox, "q2", escalate=escalate)
    with pytest.raises(NotAnApprover, match="its approvers are group:finance;"):
        respond(inbox, "q1", identity=carol)
    later = datetime.now(UTC) + timedelta(minutes=5)
    with SqliteQuestionStore(inbox) as store, SqliteEntry(inbox) as entry:
        report = sweep(store=store, entry=entry, now=later, announce=())
    assert sorted(q.envelope.question_id for q in report.escalated) == ["q1", "q2"]
    with pytest.raises(NotAnApprover, match="its approvers are group:finance, group:leads"):
        respond(inbox, "q1", identity=BOB)
    respond(inbox, "q1", identity=carol)
    respond(inbox, "q2", identity=BOB)
    assert [m["answered_by"] for m in all_sent(inbox)] == ["carol@example.com", "bob@example.com"]


class _Finance:
    """Approvers from somewhere else (an IdP, a directory): the function's owners."""

    @hookimpl
    def agent_wait_approvers(self, question: WaitEnvelope) -> list[str] | None:
        if question.tags.get("team") == "payments":
            return ["carol@example.com", "group:payments-leads"]
        return None


class _Broken:
    @hookimpl
    def agent_wait_approvers(self, question: WaitEnvelope) -> list[str] | None:
        raise RuntimeError("directory unreachable")


def test_a_plugin_names_approvers_through_the_hook(inbox: Path) -> None:
    ask(inbox, "q1", tags={"team": "payments"})
    ask(inbox, "q2", tags={"team": "support"})
    carol = Identity(subject="carol@example.com", source="proxy")
    with registered_plugin(_Finance(), "finance-approvers"):
        with pytest.raises(
            NotAnApprover, match=r"its approvers are carol@example\.com, group:payments-leads"
        ):
            respond(inbox, "q1", identity=BOB)
        respond(inbox, "q1", identity=carol)
        # The hook names nobody for this one: anyone may answer it.
        respond(inbox, "q2", identity=BOB)


def test_a_failing_hook_refuses_rather_than_lets_through(inbox: Path) -> None:
    ask(inbox)
    with (
        registered_plugin(_Broken(), "broken-approvers"),
        pytest.raises(NotAnApprover, match="RuntimeError: directory unreachable"),
    ):
        respond(inbox, "q1", identity=ALICE)
    assert status(inbox) == "open"


def test_whoever_started_the_run_cannot_approve_its_questions(inbox: Path) -> None:
    with started_by(ALICE):
        ask(inbox, "q1")
        ask(inbox, "q2", allow_self_approval=True)
    with SqliteQuestionStore(inbox) as store:
        [asked] = store.find("q1")
    assert asked.envelope.started_by == "alice@example.com"
    with pytest.raises(NotAnApprover, match="they started the run that asked it"):
        respond(inbox, "q1", identity=ALICE)
    respond(inbox, "q1", identity=BOB)
    respond(inbox, "q2", identity=ALICE)
    assert may_answer(asked, ALICE) is not None


def test_one_refused_question_leaves_the_whole_batch_unanswered(inbox: Path) -> None:
    ask(inbox, "q1")
    ask(inbox, "q2", approvers=["alice@example.com"])
    with pytest.raises(NotAnApprover, match="question q2"):
        answer_many(
            {"q1": {"action": "approve"}, "q2": {"action": "approve"}},
            identity=BOB,
            store=SqliteQuestionStore(inbox),
            entry=SqliteEntry(inbox),
        )
    assert (status(inbox, "q1"), status(inbox, "q2")) == ("open", "open")
    assert all_sent(inbox) == []


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[approvers]\nadmins = ["group:"]\n', "approvers.admins: .* got 'group:'"),
        ('[approvers.groups]\nfinance = ["group:ops"]\n', "members are people"),
        ('[approvers]\nallow_by = "yes please"\n', "approvers.allow_by"),
        ('[approvers]\nadmin = ["x"]\n', "approvers.admin: Extra inputs"),
    ],
)
def test_a_malformed_approvers_table_names_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, table: str, message: str
) -> None:
    configure(tmp_path, monkeypatch, table)
    with pytest.raises(ConfigError, match=message):
        load_approver_config()


def test_an_identity_source_is_a_short_lower_case_word() -> None:
    for source in (*IDENTITY_SOURCES, "slack", "email-link"):
        Identity(subject="alice", source=source)
        Answer.model_validate(
            {"thread_id": "t", "question_id": "q", "answer": 1, "identity_source": source}
        )
    with pytest.raises(ValueError, match="identity_source"):
        Answer.model_validate(
            {"thread_id": "t", "question_id": "q", "answer": 1, "identity_source": "Psychic!"}
        )
    with pytest.raises(ValueError, match="source"):
        Identity(subject="alice", source="")


def test_a_policy_refuses_a_malformed_approver() -> None:
    with pytest.raises(ValueError, match=r"approvers: expected a person .* got ' alice'"):
        WaitPolicy(approvers=[" alice"])


def _cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "answer", *argv], capture_output=True, text=True, env=env, timeout=120, check=False
    )


def test_the_cli_records_the_login_name_and_refuses_one_who_may_not_answer(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = getpass.getuser()
    configure(tmp_path, monkeypatch, "")
    ask(inbox, "q1", approvers=["someone-else"])
    ask(inbox, "q2", approvers=[me])
    env = {**os.environ}
    refused = _cli("q1", "approve", env=env)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"agent-wait: question q1 (thread t1): {me} (cli) may not answer it: its approvers are "
        "someone-else; nothing recorded or sent\n"
    )
    assert status(inbox, "q1") == "open"
    # --by is not for choosing a name unless the configuration allows it.
    claimed = _cli("q1", "approve", "--by", "someone-else", env=env)
    assert claimed.returncode == 1
    assert f"--by: answers are recorded under your login name ({me})" in claimed.stderr
    assert "allow_by = true" in claimed.stderr
    done = _cli("q2", "approve", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"q2 (thread t1) answered by {me} at ")
    [sent] = all_sent(inbox)
    assert (sent["answered_by"], sent["identity_source"]) == (me, "cli")


def test_the_cli_records_a_name_given_with_by_where_the_configuration_allows_it(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, monkeypatch, "[approvers]\nallow_by = true\n")
    ask(inbox, "q1", approvers=["ops-bot"])
    done = _cli("q1", "approve", "--by", "ops-bot", env={**os.environ})
    assert done.returncode == 0, done.stderr
    [sent] = all_sent(inbox)
    assert (sent["answered_by"], sent["identity_source"]) == ("ops-bot", "claimed")


def test_a_person_who_may_not_answer_may_not_cancel(inbox: Path) -> None:
    ask(inbox, approvers=["alice@example.com"])
    with SqliteQuestionStore(inbox) as store:
        with pytest.raises(NotAnApprover) as refused:
            cancel("q1", identity=BOB, store=store)
        assert str(refused.value) == (
            "question q1 (thread t1): bob@example.com (oidc) may not cancel it: its approvers "
            "are alice@example.com; nothing recorded or sent"
        )
        assert status(inbox) == "open"
        cancelled = cancel("q1", identity=ALICE, store=store)
    assert (cancelled.status, cancelled.answered_by) == ("cancelled", "alice@example.com")
    assert all_sent(inbox) == []
    with SqliteAuditLog(inbox) as log:
        [entry] = [e for e in log.entries("q1") if e.kind == "cancelled"]
    assert entry.data == {"by": "alice@example.com", "identity_source": "oidc"}


def test_whoever_started_the_run_cannot_cancel_its_questions_either(inbox: Path) -> None:
    with started_by(BOB):
        ask(inbox)
    with pytest.raises(NotAnApprover, match="may not cancel it: they started the run"):
        cancel("q1", identity=BOB, store=SqliteQuestionStore(inbox))
    assert status(inbox) == "open"


def test_the_cli_refuses_a_cancel_by_one_who_may_not_answer(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    me = getpass.getuser()
    configure(tmp_path, monkeypatch, "")
    ask(inbox, "q1", approvers=["someone-else"])
    ask(inbox, "q2", approvers=[me])
    env = {**os.environ}
    refused = _cli_cancel("q1", env=env)
    assert refused.returncode == 1
    assert refused.stderr == (
        f"agent-wait: question q1 (thread t1): {me} (cli) may not cancel it: its approvers are "
        "someone-else; nothing recorded or sent\n"
    )
    assert status(inbox, "q1") == "open"
    claimed = _cli_cancel("q1", "--by", "someone-else", env=env)
    assert claimed.returncode == 1
    assert "allow_by = true" in claimed.stderr
    assert status(inbox, "q1") == "open"
    done = _cli_cancel("q2", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"q2 (thread t1) cancelled by {me} at ")
    assert all_sent(inbox) == []


def _cli_cancel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*CLI, "cancel", *args], capture_output=True, text=True, env=env, timeout=60, check=False
    )


def test_a_start_message_may_name_who_starts_the_run() -> None:
    start = parse_message({"thread_id": "t1", "input": 1, "started_by": "alice@example.com"})
    assert isinstance(start, StartMessage)
    assert start.started_by == "alice@example.com"
    assert message_warnings({"thread_id": "t1", "started_by": "alice"}) == []
    plain = parse_message({"thread_id": "t1"})
    assert isinstance(plain, StartMessage)
    assert plain.started_by is None
    assert "started_by" not in plain.model_dump(exclude_none=True)
    with pytest.raises(ValidationError, match="started_by"):
        parse_message({"thread_id": "t1", "started_by": "bad\nname"})


def test_agent_wait_show_says_how_the_answerer_was_identified(
    inbox: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(tmp_path, monkeypatch, "")
    ask(inbox, "q1")
    respond(inbox, "q1", identity=ALICE)
    shown = subprocess.run(
        [*CLI, "show", "q1"], capture_output=True, text=True, timeout=60, check=False
    )
    assert shown.returncode == 0, shown.stderr
    assert "q1 (thread t1) answered by alice@example.com at " in shown.stdout
    assert "identity_source: oidc (how alice@example.com was identified)" in shown.stdout
