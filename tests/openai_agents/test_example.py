"""docs/examples/openai_agents_refund.py, run as a user would: a subprocess, checked by its output and inbox."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from agent_wait.core import WaitEnvelope

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "openai_agents_refund.py"


def test_refund_example_parks_approves_resumes_once_and_skips_small_refunds(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=90,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout

    assert "start order-4471: started (parked on ['call_order-4471'])" in out
    printed = out.split("envelope: ", 1)[1].split("\nanswer ", 1)[0]
    envelope = WaitEnvelope.model_validate_json(printed)
    assert envelope.thread_id == "order-4471"
    assert envelope.question == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert envelope.tags == {"approver_group": "finance"}
    assert "answer call_order-4471: resumed -> refunded 41000 on order-4471" in out
    assert "the same answer again: duplicate" in out
    assert "start order-4472: started (parked: False) -> refunded 500 on order-4472" in out

    with closing(sqlite3.connect(tmp_path / "inbox.sqlite3")) as db:
        rows = db.execute("SELECT thread_id, question_id, status, envelope FROM agent_wait_inbox")
        [(thread_id, question_id, status, stored)] = rows.fetchall()
    assert (thread_id, question_id, status) == ("order-4471", "call_order-4471", "answered")
    assert json.loads(stored) == json.loads(printed)
