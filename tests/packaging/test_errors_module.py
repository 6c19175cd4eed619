"""Every exception a plugin exports is an AgentWaitError defined in the plugin's ``_errors``."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from agent_wait.core import AgentWaitError

ROOT = Path(__file__).resolve().parents[2]
# Every distribution: core, the host and the pause tool as much as the plugins.
PLUGINS = sorted(p.name for p in ROOT.glob("packages/agent-wait-*/src/agent_wait/*"))
# Raised out of a resume on purpose: the host reports a resume that raised as resume_failed only
# for errors outside AgentWaitError, and raises its own to the caller.
NOT_AGENT_WAIT_ERRORS = {"MultiAgentRunFailed"}


@pytest.mark.parametrize("name", PLUGINS)
def test_exported_exceptions_live_in_errors_and_are_agent_wait_errors(name: str) -> None:
    module = importlib.import_module(f"agent_wait.{name}")
    exported = [
        value
        for value in (getattr(module, n) for n in module.__all__)
        if isinstance(value, type) and issubclass(value, BaseException)
    ]
    # An exception re-exported from another distribution is checked where it is defined.
    own = [cls for cls in exported if cls.__module__.startswith(f"agent_wait.{name}.")]
    outside = [
        f"{cls.__name__} ({cls.__module__})"
        for cls in own
        if not (issubclass(cls, AgentWaitError) or cls.__name__ in NOT_AGENT_WAIT_ERRORS)
        or cls.__module__ != f"agent_wait.{name}._errors"
    ]
    assert outside == []
