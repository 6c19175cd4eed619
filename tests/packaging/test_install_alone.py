"""A transport plugin installed alone brings core and nothing of the host, the pause tool or the kits.

The environment is what ``nox -s tests_package`` builds: ``uv sync --package agent-wait-sns``
from uv.lock into a fresh directory (the workspace distributions editable, the rest from uv's
cache), with no test group.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# Measured on the last commit before core was split, in this same environment (agent-wait-sns,
# agent-wait-aws and agent-wait-core, Python 3.11), by _PUBLISH below: a publish to the memory
# announcer loaded 40 agent_wait modules and 326 modules in all. The target is half the
# agent_wait modules. The total cannot halve while the envelope is a pydantic model: importing
# pydantic and building one model loads about 215 modules by itself, so the total is held to
# no more than it was.
BEFORE_AGENT_WAIT = 40
BEFORE_TOTAL = 326

_PUBLISH = """
import json, sys
from agent_wait.core import MemoryAnnounce, Question, WaitPolicy, publish

question = Question(question_id="q1", question={"function": "f", "args": {}},
                    policy=WaitPolicy(timeout="P1D"))
assert publish([question], "t1", MemoryAnnounce()).ok
print(json.dumps(sorted(sys.modules)))
"""

_INSTALLED = """
import importlib.metadata, importlib.util, json
print(json.dumps({
    "distributions": sorted(d.metadata["Name"] for d in importlib.metadata.distributions()),
    "scripts": sorted(e.name for e in importlib.metadata.entry_points(group="console_scripts")),
    "found": {name: importlib.util.find_spec(name) is not None
              for name in ("agent_wait.core", "agent_wait.sns", "agent_wait.host",
                           "agent_wait.pause", "agent_wait.testing", "pytest")},
}))
"""


def _uv() -> str:
    found = shutil.which("uv") or ROOT / ".tools" / "bin" / "uv"
    assert Path(found).exists(), "needs uv: python3 -m venv .tools && .tools/bin/pip install uv"
    return str(found)


@pytest.fixture(scope="module")
def sns_alone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The python of an environment holding agent-wait-sns and its dependencies only."""
    venv = tmp_path_factory.mktemp("sns-alone") / "venv"
    env = {
        **os.environ,
        "UV_PROJECT_ENVIRONMENT": str(venv),
        "UV_PYTHON_DOWNLOADS": "never",
    }
    env.pop("VIRTUAL_ENV", None)
    subprocess.run(
        [
            *(_uv(), "sync", "-q", "--package", "agent-wait-sns", "--locked"),
            *("--no-default-groups", "--python", sys.executable),
        ],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=600,
    )
    return venv / "bin" / "python"


def _run(python: Path, code: str, cwd: Path) -> object:
    # A clean directory and home: no agent-wait.toml or pyproject.toml of this repository is read.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENT_WAIT_", "PYTHON", "VIRTUAL_ENV"))
    }
    env["AGENT_WAIT_HOME"] = str(cwd / "home")
    out = subprocess.run(
        [str(python), "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def test_sns_alone_installs_no_cli_pause_tool_or_kits(sns_alone: Path, tmp_path: Path) -> None:
    found = _run(sns_alone, _INSTALLED, tmp_path)
    assert isinstance(found, dict)
    agent_wait = [d for d in found["distributions"] if d.startswith("agent-wait")]
    assert sorted(agent_wait) == ["agent-wait-aws", "agent-wait-core", "agent-wait-sns"]
    assert "agent-wait" not in found["scripts"]
    assert not (sns_alone.parent / "agent-wait").exists()
    assert found["found"] == {
        "agent_wait.core": True,
        "agent_wait.sns": True,
        "agent_wait.host": False,
        "agent_wait.pause": False,
        "agent_wait.testing": False,
        "pytest": False,
    }


def test_a_publish_loads_nothing_of_the_host_or_the_plugins_past_their_entry_point(
    sns_alone: Path, tmp_path: Path
) -> None:
    modules = _run(sns_alone, _PUBLISH, tmp_path)
    assert isinstance(modules, list)
    agent_wait = {m for m in modules if isinstance(m, str) and m.startswith("agent_wait.")}
    # The plugin manager imports the sns entry point (its package and _plugin), not its options,
    # agent_wait.aws or the transport helpers: those load when an sns announcer is built.
    assert {m for m in agent_wait if not m.startswith("agent_wait.core")} == {
        "agent_wait.sns",
        "agent_wait.sns._plugin",
    }
    assert "agent_wait.core.transport" not in agent_wait
    assert len(modules) <= BEFORE_TOTAL


def test_a_publish_loads_at_most_half_the_agent_wait_modules_it_did_before_the_split(
    sns_alone: Path, tmp_path: Path
) -> None:
    modules = _run(sns_alone, _PUBLISH, tmp_path)
    assert isinstance(modules, list)
    agent_wait = [m for m in modules if isinstance(m, str) and m.startswith("agent_wait")]
    assert len(agent_wait) <= BEFORE_AGENT_WAIT // 2, sorted(agent_wait)
