"""Auto-approval rules in agent-wait.toml, decided before anything is published.

The worker is the LangGraph ``serve`` on the embedded sqlite entry point; the rules come from
the configuration file the whole deployment reads.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import ConfigError, SqliteQuestionStore, derive_question_id, load_config
from agent_wait.core._audit import SqliteAuditLog, verify
from agent_wait.core._rules import Rule, decide, parse_rules
from agent_wait.core._sqlite import default_inbox_path
from agent_wait.langgraph import serve
from tests.answering.conftest import Deployment
from tests.answering.test_langgraph import transfer_graph

Deploy = Callable[..., Deployment]

RULES = """
[[announce]]
use = "sqlite"
path = "{inbox}"

[[rules]]
name = "small transfers to known accounts"
function = "issue_transfer"
when = "amount <= 100 and account in ['DE44 5001', 'DE12 0001']"
decision = "approve"

[[rules]]
name = "never to unknown accounts"
function = "issue_transfer"
when = "not (account in ['DE44 5001', 'DE12 0001'])"
decision = "reject"
"""


@pytest.fixture
def configured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "agent-wait.toml"
    # The inbox named: configured announcers are reused across tests with the same configuration.
    path.write_text(RULES.replace("{inbox}", str(default_inbox_path())), encoding="utf-8")
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(path))
    return path


def published(thread: str) -> list[Any]:
    if not default_inbox_path().exists():
        return []
    with SqliteQuestionStore(default_inbox_path()) as store:
        return [q for q in store.open_questions() if q.envelope.thread_id == thread]


def test_a_rule_approves_a_small_transfer_with_nothing_published(
    configured: Path, deploy: Deploy
) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    host.start("rule-1", {"account": "DE44 5001", "amount": 40})
    assert host.handled("rule-1") == "started"
    assert ran == [("DE44 5001", 40)]
    assert published("rule-1") == []
    question_id = derive_question_id(
        "rule-1", "issue_transfer", {"account": "DE44 5001", "amount": 40}
    )
    with SqliteAuditLog(default_inbox_path()) as log:
        entries = log.entries(question_id, "rule-1")
    assert [(e.kind, e.data["rule"], e.data["decision"]) for e in entries] == [
        ("ruled", "small transfers to known accounts", "approve")
    ]
    assert verify(entries) == []
    shown = host.cli("audit", question_id)
    assert shown.returncode == 0, shown.stderr
    assert "small transfers to known accounts" in shown.stdout


def test_a_rule_rejects_and_a_large_transfer_is_still_asked(
    configured: Path, deploy: Deploy
) -> None:
    ran: list[Any] = []
    host = deploy(serve, transfer_graph(ran))
    host.start("rule-2", {"account": "XX00 0000", "amount": 40})
    assert host.handled("rule-2") == "started"
    host.start("rule-3", {"account": "DE44 5001", "amount": 5000})
    assert host.handled("rule-3") == "started"
    assert ran == []
    assert published("rule-2") == []
    [asked] = published("rule-3")
    assert asked.envelope.question["args"]["amount"] == 5000


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        (
            'name = "r"\nwhen = "amount <== 100"\ndecision = "approve"',
            "rules[0] 'r': when 'amount <== 100': unexpected '= 100' at column 10",
        ),
        (
            'name = "r"\nwhen = "__import__(\'os\')"\ndecision = "approve"',
            "rules[0] 'r': when \"__import__('os')\": unexpected '(' after a complete expression",
        ),
        ('name = "r"\ndecision = "maybe"', "rules[0] 'r': decision: expected one of"),
        ('name = "r"\ndecison = "approve"', "rules[0] 'r': unknown key 'decison'"),
        ('decision = "approve"', "rules[0]: name: expected the rule's name"),
    ],
)
def test_a_bad_rule_is_named_at_config_load(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, rule: str, message: str
) -> None:
    path = tmp_path / "agent-wait.toml"
    path.write_text(f'[[announce]]\nuse = "sqlite"\n\n[[rules]]\n{rule}\n', encoding="utf-8")
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(path))
    with pytest.raises(ConfigError) as caught:
        load_config()
    assert message in str(caught.value)
    assert str(path) in str(caught.value)


def test_the_expression_language() -> None:
    def rule(when: str) -> Rule:
        [parsed] = parse_rules([{"name": "r", "decision": "approve", "when": when}], "test")
        return parsed

    args = {"amount": 90, "currency": "EUR", "customer": {"tier": "gold", "since": 2019}}
    matching = [
        "amount <= 100",
        "amount == 90 and currency == 'EUR'",
        "customer.tier in ['gold', 'platinum']",
        "not customer.tier == 'bronze'",
        "currency not in ['USD']",
        '(amount > 1000 or customer.since < 2020) and currency != "USD"',
        "'EU' in currency",
    ]
    failing = [
        "amount > 100",
        "missing.path <= 100",
        "not (missing <= 100)",  # unreadable: never matches, even negated
        "currency < 5",  # text with a number: no match
        "customer.tier in 'gold'" + " and false",
    ]
    for when in matching:
        assert rule(when).matches("f", args, {}), when
    for when in failing:
        assert not rule(when).matches("f", args, {}), when
    tagged = parse_rules(
        [{"name": "t", "decision": "reject", "tags": {"approver_group": "finance"}}], "test"
    )
    assert decide(tagged, "f", args, {"approver_group": "finance"}) is tagged[0]
    assert decide(tagged, "f", args, {"approver_group": "ops"}) is None
