"""docs/examples/langgraph_refund.py, run as a user would: a subprocess, its output, its inbox."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from agent_wait.core import SqliteInbox

DEMO = Path(__file__).parents[2] / "docs" / "examples" / "langgraph_refund.py"


def demo(*args: str, stdin: str = "", home: Path) -> str:
    done = subprocess.run(
        [sys.executable, str(DEMO), *args],
        input=stdin,
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", "AGENT_WAIT_HOME": str(home)},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_demo_auto_approves_the_big_refund(tmp_path: Path) -> None:
    db = tmp_path / "inbox.sqlite3"
    out = demo("--db", str(db), home=tmp_path / "home")
    assert f"inbox: {db}" in out
    small, big = out.split("\n== ")[1:]
    assert "order-1002" in small
    assert "questions published: 0" in small
    assert "refunded 120 EUR on order-1002" in small
    assert '"type": "wait.created"' in big
    assert '"approver_group": "finance"' in big
    assert "approver: approve question" in big
    assert "resume: resumed" in big
    assert big.rstrip().endswith("agent: Refund request done: refunded 41000 EUR on order-4471")
    printed = json.loads(big.split("envelope: ", 1)[1].split("\napprover:", 1)[0])
    assert f"parked on: ['{printed['question_id']}']" in big
    with SqliteInbox(db) as inbox:
        assert inbox.open_questions() == []
        row = inbox.get(printed["thread_id"], printed["question_id"])
    assert row is not None
    assert row.status == "answered"
    assert row.envelope.to_dict() == printed


def test_demo_interactive_reject_does_not_refund(tmp_path: Path) -> None:
    out = demo("--interactive", home=tmp_path / "home", stdin="reject\n")
    assert f"inbox: {tmp_path / 'home' / 'inbox.sqlite3'}" in out  # the default location
    big = out.split("\n== ")[2]
    assert "approver: reject question" in big
    assert "refunded 41000" not in big
    assert "rejected at the terminal" in big
