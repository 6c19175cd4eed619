"""docs/governance.md: its Python runs as printed and its rules load."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from agent_wait.core import WaitPolicy
from agent_wait.core._rules import parse_rules

PAGE = Path(__file__).resolve().parents[2] / "docs" / "governance.md"


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.DOTALL)


def test_the_worked_example_runs_and_prints_what_the_page_says(tmp_path: Path) -> None:
    *_, example = blocks("python")
    done = subprocess.run(
        [sys.executable, "-c", example],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "1 of 2 approvals, waiting for finance"
    assert "the arguments were edited since alice approved" in lines[1]
    assert lines[2] == "{'args': {'amount': 40000}, 'action': 'approve'}"
    assert lines[3] == "['asked', 'delivered', 'vote', 'vote', 'vote', 'answered']"


def test_the_policies_on_the_page_validate() -> None:
    first, *_ = blocks("python")
    namespace: dict[str, object] = {"WaitPolicy": WaitPolicy}
    exec(first, namespace)  # the page's own two lines, run to prove they validate


def test_the_rules_on_the_page_load() -> None:
    [toml] = [block for block in blocks("toml") if "[[rules]]" in block]
    rules = parse_rules(tomllib.loads(toml)["rules"], "docs/governance.md")
    assert [r.name for r in rules] == [
        "small refunds",
        "no refunds to closed accounts",
        "finance decides the rest",
    ]
    args = {"amount": 80, "currency": "EUR", "account": {"status": "open"}}
    assert rules[0].matches("issue_refund", args, {})
    assert not rules[1].matches("issue_refund", args, {})
