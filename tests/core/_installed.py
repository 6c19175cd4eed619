"""Skip markers for core tests that need a distribution ``nox -s tests_package`` leaves out."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, distribution

import pytest


def _installed(name: str) -> bool:
    try:
        distribution(name)
    except PackageNotFoundError:
        return False
    return True


# The third-party example plugin (tests/plugins/agent-wait-example) is in the test group, so
# `nox -s tests` and `nox -s tests_package` install it; an environment without the group does not.
needs_example_plugin = pytest.mark.skipif(
    not _installed("agent-wait-example-thirdparty"),
    reason="needs agent-wait-example-thirdparty (tests/plugins/agent-wait-example), not installed here",
)
