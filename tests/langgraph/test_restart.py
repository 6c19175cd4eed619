"""A parked thread survives the process: SqliteSaver checkpoints, a new process resumes it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_wait.core import SqliteQuestionStore

APP = Path(__file__).with_name("refund_app.py")
START = {"thread_id": "order-4471", "input": {"order_id": "order-4471", "amount": 41000}}


def run(tmp_path: Path, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    paths = [tmp_path / "checkpoints.sqlite3", tmp_path / "inbox.sqlite3", tmp_path / "runs.txt"]
    done = subprocess.run(
        [sys.executable, str(APP), *map(str, paths), *map(json.dumps, messages)],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_new_process_republishes_and_resumes_with_the_same_question_id(tmp_path: Path) -> None:
    [started] = run(tmp_path, START)
    assert started["outcome"] == "started"
    [question_id] = started["question_ids"]

    answer = {
        "thread_id": "order-4471",
        "question_id": question_id,
        "answer": {"action": "approve"},
    }
    redelivered, resumed, duplicate = run(tmp_path, START, answer, answer)
    assert redelivered == {"outcome": "republished", "question_ids": [question_id], "result": None}
    assert resumed == {
        "outcome": "resumed",
        "question_ids": [],
        "result": "refunded 41000 on order-4471",
    }
    assert duplicate["outcome"] == "duplicate"
    assert (tmp_path / "runs.txt").read_text() == "order-4471 41000\n"

    # Published twice under one question id, so the inbox holds one row for it.
    with SqliteQuestionStore(tmp_path / "inbox.sqlite3") as inbox:
        [item] = inbox.open_questions()
    assert item.envelope.question_id == question_id
    assert item.envelope.tags == {"approver_group": "finance"}
