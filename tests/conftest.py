"""Fixtures shared by every package's tests."""

from __future__ import annotations

import re
import zlib
from collections.abc import Generator
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import pytest
from hypothesis import settings

# The same generated examples on every run: a case that fails, fails every time (then fix it and
# keep it as an explicit case), and CI never turns red by the draw.
settings.register_profile("deterministic", derandomize=True)
settings.load_profile("deterministic")

ROOT = Path(__file__).resolve().parents[1]


def _whole_workspace_installed() -> bool:
    try:
        for package in (ROOT / "packages").glob("agent-wait-*"):
            version(package.name)
    except PackageNotFoundError:
        return False
    return True


# `nox -s tests_package` installs one distribution alone: a module of its tests that also drives a
# sibling (a framework, another transport) is skipped there, naming what it needs. With the whole
# workspace installed a missing module stays an error.
_PARTIAL = not _whole_workspace_installed()
_MISSING = re.compile(r"ModuleNotFoundError: No module named '([^']+)'")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--shard",
        default=None,
        metavar="K/N",
        help="run only the K-th of N parts of the collected tests (K from 1), split by test id",
    )


def _shard(value: str) -> tuple[int, int]:
    try:
        part, parts = (int(n) for n in value.split("/"))
    except ValueError:
        raise pytest.UsageError(f"--shard: expected K/N such as 1/2, got {value!r}") from None
    if not 1 <= part <= parts:
        raise pytest.UsageError(f"--shard: K must be between 1 and N, got {value!r}")
    return part, parts


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    value = config.getoption("--shard")
    if value is None:
        return
    part, parts = _shard(value)
    # A checksum of the test id, not hash(): every xdist worker and every run splits alike.
    kept, dropped = [], []
    for item in items:
        in_part = zlib.crc32(item.nodeid.encode()) % parts == part - 1
        (kept if in_part else dropped).append(item)
    config.hook.pytest_deselected(items=dropped)
    items[:] = kept


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    report = yield
    if _PARTIAL and report.failed and isinstance(collector, pytest.Module):
        missing = _MISSING.search(report.longreprtext)
        if missing:
            report.outcome = "skipped"
            reason = (
                f"Skipped: needs {missing.group(1)}, not installed with this distribution alone"
            )
            report.longrepr = (str(collector.path), 0, reason)
    return report


@pytest.fixture(autouse=True)
def _isolated_agent_wait_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep tests away from the user's config and embedded inbox."""
    for name in (
        "AGENT_WAIT_ANNOUNCE",
        "AGENT_WAIT_CONFIG",
        "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD",
        "AGENT_WAIT_ALLOW_BY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AGENT_WAIT_HOME", str(tmp_path / "agent-wait-home"))
    monkeypatch.chdir(tmp_path)
