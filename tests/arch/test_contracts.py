"""The import contracts come from the packages' folders: a plugin copied from any flavour of the
template is held to them with no edit outside its folder, and each rule refuses a plugin that
breaks it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.arch.contracts import ROOT, contracts, distributions
from tests.arch.template import EXAMPLE_NAMES, copy_each, copy_renamed


@pytest.fixture
def acme(tmp_path: Path) -> Path:
    return copy_renamed(tmp_path / "agent-wait-acme", "acme")


def _check(*plugins: Path) -> subprocess.CompletedProcess[str]:
    # Each copy is importable from its src/ (agent_wait is a namespace shared by every portion).
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(str(p / "src") for p in plugins)}
    command = [sys.executable, "-m", "tests.arch.contracts"]
    command += [f"--package={plugin}" for plugin in plugins]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)


def _add_line(plugin: Path, module: str, line: str) -> None:
    path = plugin / "src" / "agent_wait" / "acme" / module
    text = path.read_text(encoding="utf-8")
    marker = "from __future__ import annotations\n"
    path.write_text(text.replace(marker, f"{marker}\n{line}\n", 1), encoding="utf-8")


def test_a_copy_of_each_template_flavour_is_held_to_the_contracts_with_no_edit_elsewhere(
    tmp_path: Path,
) -> None:
    checked = _check(*copy_each(tmp_path).values())
    assert checked.returncode == 0, checked.stdout + checked.stderr
    for name in EXAMPLE_NAMES.values():
        assert f"agent_wait.{name} imports only what agent-wait-{name}" in checked.stdout
    assert "broken" not in checked.stdout.replace("0 broken", "")


@pytest.mark.parametrize(
    ("module", "line", "refusal"),
    [
        # another plugin: independence, and outside what acme declares
        ("_announcer.py", "import agent_wait.webhook", "not allowed to import agent_wait.webhook"),
        # a library another distribution declares, which acme does not
        ("_announcer.py", "import redis", "not allowed to import redis"),
        # the host, which acme does not depend on
        ("_announcer.py", "import agent_wait.host", "not allowed to import agent_wait.host"),
        # core's private module
        ("_announcer.py", "import agent_wait.core._publish", "agent_wait.core._publish"),
        # a circle: _announcer already imports _options
        ("_options.py", "import agent_wait.acme._announcer", "no import circles"),
    ],
)
def test_each_rule_refuses_a_plugin_that_breaks_it(
    acme: Path, module: str, line: str, refusal: str
) -> None:
    _add_line(acme, module, f"{line}  # noqa: F401")
    checked = _check(acme)
    assert checked.returncode != 0
    assert refusal in checked.stdout


def test_every_distribution_is_held_to_what_it_declares_and_no_plugin_to_another() -> None:
    dists = distributions()
    table = contracts(dists)
    names = {d.package for d in dists}
    assert set(table["root_packages"]) == names
    by_type: dict[str, list[dict[str, object]]] = {}
    for contract in table["contracts"]:
        by_type.setdefault(contract["type"], []).append(contract)
    sources = {c["source_modules"][0] for c in by_type["forbidden"]}
    assert names <= sources
    (independence,) = by_type["independence"]
    # Every plugin (what no distribution depends on) but core and the three split from it.
    assert {"agent_wait.sns", "agent_wait.langgraph", "agent_wait.inbox"} <= set(
        independence["modules"]
    )
    assert not {"agent_wait.core", "agent_wait.host", "agent_wait.aws"} & set(
        independence["modules"]
    )
    (acyclic,) = by_type["acyclic_siblings"]
    assert set(acyclic["ancestors"]) == names
    core = next(c for c in by_type["forbidden"] if c["source_modules"] == ["agent_wait.core"])
    forbidden = set(core["forbidden_modules"])
    assert names - {"agent_wait.core"} <= forbidden
    assert {"boto3", "langgraph", "starlette", "pytest", "httpx", "agents"} <= forbidden
    assert not {"pydantic", "pluggy", "pydantic_core"} & forbidden
