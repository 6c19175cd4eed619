"""The OpenAI Agents SDK tests run only where the SDK is installed."""

from __future__ import annotations

import pytest

pytest.importorskip("agents")
