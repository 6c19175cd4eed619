"""A new plugin needs a flavour of ``packages/_template`` and one install line, nothing else.

Each flavour is copied and renamed into a temporary folder, outside the workspace, and installed
into one fresh environment that holds only the kits and the ``agent-wait`` command from this
checkout (``uv sync --package agent-wait-testing`` from uv.lock, the rest from uv's cache). There
it passes its conformance kit, core finds it by its entry-point name, and the template README's
example of it runs as written.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.arch.template import EXAMPLE_NAMES, FLAVOURS, TEMPLATE, copy_each, main

ROOT = Path(__file__).resolve().parents[2]
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class Installed:
    python: Path
    copies: dict[str, Path]


def _uv() -> str:
    found = shutil.which("uv") or ROOT / ".tools" / "bin" / "uv"
    assert Path(found).exists(), "needs uv: python3 -m venv .tools && .tools/bin/pip install uv"
    return str(found)


def _clean_env(home: Path) -> dict[str, str]:
    # No agent-wait.toml, environment or virtualenv of this checkout leaks into the copies' runs.
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("AGENT_WAIT_", "PYTHON", "VIRTUAL_ENV", "PYTEST_"))
    }
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), UV_PYTHON_DOWNLOADS="never")
    return env


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("new-plugins")
    copies = copy_each(base)
    venv = base / "venv"
    # uv keeps this machine's home: its cache holds the locked wheels.
    env = {key: value for key, value in os.environ.items() if key != "VIRTUAL_ENV"}
    env.update(UV_PROJECT_ENVIRONMENT=str(venv), UV_PYTHON_DOWNLOADS="never")
    sync = [_uv(), "sync", "-q", "--package", "agent-wait-testing", "--locked"]
    sync += ["--no-default-groups", "--python", sys.executable]
    subprocess.run(sync, cwd=ROOT, env=env, check=True, timeout=600)
    python = venv / "bin" / "python"
    # The one line: the copies as their authors install them, with their [test] extra.
    install = [_uv(), "pip", "install", "-q", "--python", str(python)]
    install += [f"-e{copy}[test]" for copy in copies.values()]
    subprocess.run(install, cwd=base, env=env, check=True, timeout=600)
    return Installed(python, copies)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_each_flavour_passes_its_kit_installed_alone(installed: Installed, flavour: str) -> None:
    copy = installed.copies[flavour]
    done = subprocess.run(
        [str(installed.python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=copy,
        env=_clean_env(copy),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = done.stdout.strip().splitlines()[-1]
    passed = re.search(r"(\d+) passed", summary)
    assert passed is not None, summary
    assert int(passed.group(1)) >= 5, summary


def test_core_finds_each_by_its_entry_point_name(installed: Installed, tmp_path: Path) -> None:
    command = installed.python.parent / "agent-wait"
    done = subprocess.run(
        [str(command), "plugins", "--json"],
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    assert listed["failed"] == []
    acme, queue, db = (EXAMPLE_NAMES[f] for f in FLAVOURS)
    hooks = {p["name"]: p["hooks"] for p in listed["plugins"] if p["name"] != "core"}
    assert hooks == {
        acme: ["register_announcers"],
        queue: ["register_entry_points"],
        db: ["register_announcers", "register_question_stores"],
    }
    announcers = {a["name"]: a for a in listed["announcers"]}
    entry_points = {e["name"]: e for e in listed["entry_points"]}
    assert announcers[acme]["distribution"] == f"agent-wait-{acme}"
    assert announcers[db]["distribution"] == f"agent-wait-{db}"
    assert entry_points[queue]["distribution"] == f"agent-wait-{queue}"
    # Each option model's JSON Schema, from the copy's own model.
    assert announcers[acme]["options_schema"]["required"] == ["directory"]
    assert announcers[db]["options_schema"]["required"] == ["database"]
    assert entry_points[queue]["options_schema"]["required"] == ["queue"]


def _readme_examples() -> dict[str, str]:
    """The template README's example of each flavour: the block under its ``## The `x` flavour``."""
    found: dict[str, str] = {}
    for section in (TEMPLATE / "README.md").read_text(encoding="utf-8").split("\n## ")[1:]:
        heading = re.match(r"The `(\w+)` flavour", section)
        block = PYTHON_BLOCK.search(section)
        if heading and block:
            found[heading.group(1)] = block.group(1)
    return found


def test_the_readme_has_an_example_of_each_flavour() -> None:
    assert sorted(_readme_examples()) == sorted(FLAVOURS)


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_the_readme_example_runs_against_the_copy(
    installed: Installed, flavour: str, tmp_path: Path
) -> None:
    name = EXAMPLE_NAMES[flavour]
    code = _readme_examples()[flavour].replace('"template"', f'"{name}"')
    done = subprocess.run(
        [str(installed.python), "-c", code],
        cwd=tmp_path,
        env=_clean_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, f"the {flavour} example does not run as written:\n{done.stderr}"


def test_the_copy_command_writes_a_renamed_flavour(tmp_path: Path) -> None:
    target = tmp_path / "agent-wait-acme"
    assert main(["acme", "--flavour", "store", "--to", str(target)]) == 0
    store = (target / "src" / "agent_wait" / "acme" / "_store.py").read_text(encoding="utf-8")
    assert "class AcmeQuestionStore:" in store
    assert "template" not in store.lower()
    assert 'name = "agent-wait-acme"' in (target / "pyproject.toml").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("argv", "refusal"),
    [
        (["Acme"], "expected a lower-case Python identifier such as acme, got 'Acme'"),
        (["my-plugin"], "got 'my-plugin'"),
        (["class"], "got 'class'"),
        (["acme", "--flavour", "ledger"], "invalid choice: 'ledger'"),
    ],
)
def test_the_copy_command_refuses_a_bad_name_or_flavour(
    argv: list[str], refusal: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    assert refusal in capsys.readouterr().err


def test_the_copy_command_never_writes_over_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "kept").mkdir()
    with pytest.raises(SystemExit):
        main(["acme", "--to", str(tmp_path / "kept")])
    assert "exists" in capsys.readouterr().err
    assert list((tmp_path / "kept").iterdir()) == []
