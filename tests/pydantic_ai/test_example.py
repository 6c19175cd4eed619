"""docs/examples/pydantic_ai_refund.py, run as a user would: a subprocess, checked by output and stores."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

from pydantic_ai.messages import ModelMessagesTypeAdapter, ToolReturnPart

from agent_wait.core import WaitEnvelope

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "pydantic_ai_refund.py"


def test_refund_example_parks_approves_resumes_once_and_skips_small_refunds(tmp_path: Path) -> None:
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

    assert "start order-4471: started (parked on ['call_order-4471_1'])" in out
    printed = out.split("envelope: ", 1)[1].split("\nanswer ", 1)[0]
    envelope = WaitEnvelope.model_validate_json(printed)
    assert envelope.thread_id == "order-4471"
    assert envelope.question_id == "call_order-4471_1"
    assert envelope.question == {
        "function": "issue_refund",
        "args": {"order_id": "order-4471", "amount": 41000},
    }
    assert envelope.default == {"action": "reject", "reason": "no response within P3D"}
    assert envelope.tags == {"approver_group": "finance"}
    assert "answer call_order-4471_1: resumed -> refunded 41000 on order-4471" in out
    assert "same answer again: duplicate" in out
    assert "start order-4472: started (parked: False) -> refunded 500 on order-4472" in out
    # The approved refund ran once despite the duplicate answer; the small one never asked.
    assert "refunds issued: ['order-4471', 'order-4472']" in out

    with closing(sqlite3.connect(tmp_path / "inbox.sqlite3")) as db:
        rows = db.execute("SELECT thread_id, question_id, status, envelope FROM agent_wait_inbox")
        [(thread_id, question_id, status, stored)] = rows.fetchall()
    assert (thread_id, question_id, status) == ("order-4471", "call_order-4471_1", "answered")
    assert json.loads(stored) == json.loads(printed)

    # The host stored each thread's history; the approved call's return is in it.
    with closing(sqlite3.connect(tmp_path / "history.sqlite3")) as db:
        [(data,)] = db.execute(
            "SELECT messages FROM agent_wait_history WHERE thread_id = 'order-4471'"
        ).fetchall()
    returns = [
        part.content
        for message in ModelMessagesTypeAdapter.validate_json(data)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    assert returns == ["refunded 41000 on order-4471"]
