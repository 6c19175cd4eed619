"""Every exception agent-wait exports is an AgentWaitError, keeping its standard bases."""

from __future__ import annotations

import importlib

import pytest

from agent_wait.core import AgentWaitError

PUBLIC_MODULES = [
    "agent_wait.core",
    "agent_wait.host.adapter",
    "agent_wait.host",
    "agent_wait.pause",
    "agent_wait.core.transport",
]


def exported_exceptions(module_name: str) -> list[type[BaseException]]:
    module = importlib.import_module(module_name)
    found: list[type[BaseException]] = []
    for name in module.__all__:
        value = getattr(module, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            found.append(value)
    return found


@pytest.mark.parametrize("module_name", PUBLIC_MODULES)
def test_every_exported_exception_is_an_agent_wait_error(module_name: str) -> None:
    outside = [
        cls.__name__
        for cls in exported_exceptions(module_name)
        if not issubclass(cls, AgentWaitError)
    ]
    assert not outside, f"{module_name} exports exceptions outside AgentWaitError: {outside}"


def test_pause_errors_keep_their_bases() -> None:
    from agent_wait.pause import InvalidPauseRequest, PauseRefused

    # Existing `except ValueError` around a parse keeps catching a malformed request.
    assert issubclass(InvalidPauseRequest, ValueError)
    refused = PauseRefused("rate_limited", "wait 3 s", retry_after_seconds=3.0)
    assert isinstance(refused, AgentWaitError)
    assert (refused.code, refused.retry_after_seconds, str(refused)) == (
        "rate_limited",
        3.0,
        "wait 3 s",
    )
