"""The email configuration on docs/channels.md builds the announcer it describes."""

from __future__ import annotations

import io
import re
import tomllib
from contextlib import redirect_stdout
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from agent_wait.core import Question, SqliteAnnounce, announcer, publish
from agent_wait.host._cli import main
from tests.email.conftest import SECRET, Mailbox

T0 = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "channels.md"


def test_the_configured_announcer_on_the_page_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTP_PASSWORD", "smtp-password")
    monkeypatch.setenv("AGENT_WAIT_EMAIL_SECRET", SECRET)
    blocks = re.findall(r"```toml\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)
    built = [
        announcer(entry["use"], **{k: v for k, v in entry.items() if k != "use"})
        for block in blocks
        for entry in tomllib.loads(block)["announce"]
        if entry["use"] == "email"
    ]
    assert [a.name for a in built] == ["email", "email"]
    assert built[1].lifecycle_events == {
        "wait.reminder",
        "wait.escalated",
        "wait.last_warning",
        "wait.expired",
    }


def test_the_reminders_on_the_page_go_out_as_the_page_says(
    mailbox: Mailbox, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The policy of "Reminders and escalation", swept as its console block shows."""
    text = PAGE.read_text(encoding="utf-8")
    section = text[text.index("## Reminders and escalation") :]
    namespace: dict[str, Any] = {}
    exec(re.findall(r"```python\n(.*?)```", section, re.DOTALL)[0], namespace)
    policy = namespace["policy"]
    ask = Question(question_id="q1", question={"function": "pay", "args": {}}, policy=policy)
    publish([ask], "t1", SqliteAnnounce(tmp_path / "inbox.sqlite3"), clock=lambda: T0)
    config = tmp_path / "agent-wait.toml"
    config.write_text(
        f"""
[[announce]]
use = "sqlite"

[[announce]]
use = "email"
host = "127.0.0.1"
port = {mailbox.port}
security = "none"
sender = "agent@example.com"
links_url = "https://approve.example.com"
secret_env = "AGENT_WAIT_EMAIL_SECRET"
lifecycle_events = ["wait.reminder", "wait.escalated"]

[announce.routes]
"approver_group:finance" = ["clerk@example.com"]
"approver_group:finance-leads" = ["lead@example.com"]
""",
        encoding="utf-8",
    )
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path))
    monkeypatch.setenv("AGENT_WAIT_CONFIG", str(config))
    monkeypatch.setenv("AGENT_WAIT_EMAIL_SECRET", SECRET)
    console = re.findall(r"```console\n\$ agent-wait (.*?)\n(.*?)```", section, re.DOTALL)[0]
    out = io.StringIO()
    with redirect_stdout(out):
        assert main(console[0].split()) == 0
    assert out.getvalue() == console[1]
    # Swept at the escalation's time: the reminder due then reaches the wider group too.
    assert [(m["To"], m["Subject"].split(":")[0]) for m in mailbox.messages] == [
        ("clerk@example.com", "Reminder"),
        ("lead@example.com", "Reminder"),
        ("clerk@example.com", "Escalated"),
        ("lead@example.com", "Escalated"),
    ]
