"""docs/examples/langgraph_refund.py, run as ``nox -s demo`` runs it: a worker process, the
``agent-wait`` command line, the embedded inbox and entry point, a durable checkpointer."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from agent_wait.core import SqliteEntry, SqliteQuestionStore
from agent_wait.host import default_approver

DEMO = Path(__file__).parents[2] / "docs" / "examples" / "langgraph_refund.py"


@pytest.mark.integration
def test_demo_parks_answers_sweeps_and_resumes_in_separate_processes(tmp_path: Path) -> None:
    home = tmp_path / "home"
    # The environment's agent-wait settings must not leak in: the demo is the embedded default.
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}/usr/bin:/bin",
        "AGENT_WAIT_ENTRY": '{"use": "nowhere"}',
    }
    done = subprocess.run(
        [sys.executable, str(DEMO), "--home", str(home)],
        capture_output=True,
        text=True,
        check=False,
        timeout=110,
        env=env,
    )
    out = done.stdout
    assert done.returncode == 0, out + done.stderr

    # Every step is a command it printed, with that command's output.
    commands = re.findall(r"^\$ (.*)$", out, re.MULTILINE)
    assert commands[0].endswith("langgraph_refund.py worker &")
    assert [c.split()[3] for c in commands[1:4]] == ["order-1002", "order-4471", "order-4502"]
    assert [c.split()[:2] for c in commands[4:]] == [
        ["agent-wait", "inbox"],
        ["agent-wait", "answer"],
        ["agent-wait", "sweep"],
        ["agent-wait", "inbox"],
        ["kill", "-TERM"],
    ]
    assert "worker | agent (order-1002): Done: refunded 120 EUR on order-1002" in out

    # The inbox the demo printed: both parked questions, the short one first.
    listed = out.split("$ agent-wait inbox\n", 1)[1].split("\n\n", 1)[0].splitlines()
    # Each row is followed by who asked, indented.
    table = [line for line in listed if not line.startswith("  ")]
    assert listed[2] == "  asked by LangGraph · node tools"
    rows = [line.split() for line in table[1:]]
    # The call is the last column, after two spaces; its function comes first.
    calls = [line.rsplit("  ", 1)[1] for line in table[1:]]
    assert [(row[1], call.split("(")[0]) for row, call in zip(rows, calls, strict=True)] == [
        ("order-4502", "ship_replacement"),
        ("order-4471", "issue_refund"),
    ]
    assert "amount=41,000" in calls[1]
    store = SqliteQuestionStore(home / "inbox.sqlite3")
    [replacement] = store.find(rows[0][0], "order-4502")
    [refund] = store.find(rows[1][0], "order-4471")
    # The CLI records the login name of the process that answers.
    assert f"$ agent-wait answer {rows[1][0]} approve --answer" in out
    assert refund.status == "answered"
    assert refund.answered_by == default_approver()
    assert refund.answer == {"note": "ok", "action": "approve"}
    assert "worker | agent (order-4471): Done: refunded 41000 EUR on order-4471" in out

    assert replacement.status == "expired"
    assert replacement.answered_by == "sweeper"
    assert f"expired {replacement.envelope.question_id} (thread order-4502" in out
    assert (
        'worker | agent (order-4502): Not done: {"action": "reject", '
        '"reason": "no response within PT2S"}' in out
    )
    assert "refunded 120 EUR on order-1002" not in out.split("$ agent-wait inbox")[1]
    assert out.count("refunded 41000 EUR") == 1  # the refund ran once
    assert "replacement shipped" not in out
    assert out.rstrip().endswith("worker stopped: acknowledged 5")

    # The runs were checkpointed in a file, and every message was acknowledged.
    assert (home / "checkpoints.sqlite3").stat().st_size > 0
    with SqliteEntry(home / "inbox.sqlite3") as entry:
        assert entry.receive(10) == []
        assert entry.dead_letters() == []
