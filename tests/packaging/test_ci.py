""".ci/run runs the README's test command verbatim, the checks before it, and stops on failure."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from agent_wait.host import FRAMEWORKS

ROOT = Path(__file__).resolve().parents[2]


def _readme_test_command() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    quickstart = readme[readme.index("## Quickstart") :]
    match = re.search(r"^# the tests .*\n(.+)$", quickstart, re.MULTILINE)
    assert match, "the README Quickstart has no '# the tests' command"
    return match.group(1)


def test_ci_runs_the_readme_test_command_verbatim_after_the_checks() -> None:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    command = _readme_test_command()
    assert command.endswith("nox -s tests")
    assert command in lines
    checks = next(line for line in lines if re.match(r"^\.tools/bin/nox -s lint ", line))
    assert {"lint", "typecheck", "arch", "docs"} <= set(checks.split()[2:])
    assert lines.index(checks) < lines.index(command)


def test_ci_stops_at_the_first_failure() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\nset -euo pipefail\n" in script
    assert "CREATE DATABASE test" in script


def test_ci_installs_each_distribution_alone_and_tries_the_frameworks_floors_and_newest() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert "\n.tools/bin/nox -s tests_package -- --collect-only -q -n 0\n" in script
    # The floors are declared by us: a failure there fails the run.
    assert '\n.tools/bin/nox -k "canary and lowest" -- -k contract\n' in script
    # The canary may fail, but only with its reason printed.
    canary = script.index('if ! .tools/bin/nox -k "canary and newest" -- -k contract; then')
    assert 'echo "ci: canary failed:' in script[canary:]


def test_every_framework_adapter_names_what_the_canary_upgrades() -> None:
    for name in FRAMEWORKS:
        pyproject = ROOT / "packages" / f"agent-wait-{name.replace('_', '-')}" / "pyproject.toml"
        declared = tomllib.loads(pyproject.read_text(encoding="utf-8"))
        canary = declared.get("tool", {}).get("agent-wait", {}).get("canary")
        assert canary, f"{pyproject}: no [tool.agent-wait] canary, so nox -s canary skips it"
