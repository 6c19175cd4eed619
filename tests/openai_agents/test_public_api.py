"""The public API of agent_wait.openai_agents, pinned."""

from __future__ import annotations

import inspect

import agent_wait.openai_agents as package


def test_public_api() -> None:
    assert sorted(package.__all__) == [
        "InMemoryRuns",
        "OpenAIAgentsServeOptions",
        "PostgresRuns",
        "RunStore",
        "SqliteRuns",
        "ThreadRecord",
        "ahandle_message",
        "aserve",
        "astream_message",
        "handle_message",
        "questions_in",
        "serve",
        "stream_message",
        "wait",
    ]


def test_every_public_object_is_documented() -> None:
    not_installed: list[str] = []
    for name in package.__all__:
        try:
            public = getattr(package, name)
        except ImportError as error:  # an extra not installed here
            not_installed.append(str(error))
            continue
        assert (public.__doc__ or "").strip(), name
    # What the extra's ImportError says: which extra to install.
    assert all("pip install" in hint for hint in not_installed), not_installed


def test_the_entry_points_take_the_same_arguments() -> None:
    entry_points = [
        package.handle_message,
        package.ahandle_message,
        package.stream_message,
        package.astream_message,
    ]
    [parameters] = {
        str(inspect.signature(f).replace(return_annotation=inspect.Signature.empty))
        for f in entry_points
    }
    assert parameters.startswith("(agent: 'Agent[Any]', message:")
    assert "*, runs: 'RunStore'" in parameters
    assert parameters.endswith("**options: 'Unpack[MessageOptions]')")
    assert inspect.iscoroutinefunction(package.ahandle_message)
    assert not inspect.iscoroutinefunction(package.handle_message)
