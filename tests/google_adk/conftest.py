"""Fixtures of the Google ADK tests: runners on a scripted model, a memory inbox."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from google.adk.agents import LlmAgent
from google.adk.apps import App, ResumabilityConfig
from google.adk.runners import Runner
from google.adk.sessions import BaseSessionService, InMemorySessionService

from tests.google_adk.fake_model import ScriptedModel


def runner_for(
    tools: Sequence[Any],
    calls: Sequence[tuple[str, dict[str, Any]]],
    sessions: BaseSessionService | None = None,
    *,
    resumable: bool = False,
) -> Runner:
    """A real ADK Runner whose agent's model makes ``calls``, one per turn; with ``resumable``,
    of an ADK ``App`` with ``ResumabilityConfig(is_resumable=True)``."""
    agent = LlmAgent(name="shop", model=ScriptedModel(calls=list(calls)), tools=list(tools))
    sessions = sessions or InMemorySessionService()
    if resumable:
        config = ResumabilityConfig(is_resumable=True)
        app = App(name="shop", root_agent=agent, resumability_config=config)
        return Runner(app=app, session_service=sessions)
    return Runner(app_name="shop", agent=agent, session_service=sessions)
