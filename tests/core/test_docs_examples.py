"""The plugin-author examples in docs/examples run as published (writing-a-plugin.md includes them)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples"


@pytest.mark.parametrize(
    ("example", "printed"),
    [
        ("plugin_basics.py", "published refund-4471 to questions/finance"),
        ("plugin_client_announce.py", "13 envelopes stored; refused: ['huge']"),
    ],
)
def test_plugin_example_runs(example: str, printed: str) -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / example)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert printed in done.stdout


def test_the_governance_example_refuses_then_records_a_verified_approver() -> None:
    done = subprocess.run(
        [sys.executable, str(EXAMPLES / "governance_approvers.py")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "refused mallory@example.com: its approvers are group:finance\n"
        "refused bob@example.com: they started the run that asked it, and its policy does not "
        "allow self-approval (allow_self_approval)\n"
        "answered by alice@example.com (oidc)\n"
    )
    page = (EXAMPLES.parent / "governance.md").read_text(encoding="utf-8")
    assert '--8<-- "examples/governance_approvers.py"' in page


def test_writing_a_plugin_includes_every_plugin_example() -> None:
    page = (EXAMPLES.parent / "writing-a-plugin.md").read_text(encoding="utf-8")
    for example in sorted(EXAMPLES.glob("plugin_*.py")):
        assert f'--8<-- "examples/{example.name}"' in page, f"{example.name} is not on the page"
