"""Fixtures of the Pydantic AI tests: a scripted offline model, a fixed clock, a memory inbox.

This directory has no ``__init__.py``: as a package it would be named ``pydantic_ai`` under
pytest's importlib mode and shadow the framework itself.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from agent_wait.core import MemoryAnnounce
from tests.pydantic_ai.scripted import Script

NOW = datetime(2026, 9, 11, 9, 0, tzinfo=UTC)


@pytest.fixture
def inbox() -> MemoryAnnounce:
    return MemoryAnnounce()


@pytest.fixture
def clock() -> Callable[[], datetime]:
    return lambda: NOW


@pytest.fixture
def script() -> Callable[..., Script]:
    def make(*calls: tuple[str, dict[str, Any]]) -> Script:
        return Script(*calls)

    return make
