"""docs/examples/google_adk_refund.py, run as a user would: a subprocess, checked by its output."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from agent_wait.core import WaitEnvelope

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "google_adk_refund.py"


def test_refund_example_parks_approves_resumes_once_and_skips_small_refunds(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLE), str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "start order-4471: started (parked on ['adk-" in out
    printed = out.split("envelope: ", 1)[1].split("\nanswer ", 1)[0]
    envelope = WaitEnvelope.model_validate_json(printed)
    assert envelope.thread_id == "order-4471"
    assert envelope.question["args"] == {"order_id": "order-4471", "amount": 41000}
    assert f"answer {envelope.question_id}: resumed -> refunded 41000 on order-4471" in out
    assert "the same answer again: duplicate (ran: False)" in out
    assert "start order-4472: started (parked: False) -> refunded 500 on order-4472" in out
