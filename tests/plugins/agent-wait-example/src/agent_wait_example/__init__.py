"""A third-party agent-wait plugin: the ``example_file`` announcer and two hooks.

The entry point names ``agent_wait_example._plugin``; importing it imports this package first,
so nothing here may import the announcer (or its transport library) eagerly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_wait_example._plugin import OUTCOMES_ENV, STAMP_TAG, STAMPED_TAG

if TYPE_CHECKING:
    from agent_wait_example._announcer import ExampleFileAnnounce

__all__ = ["OUTCOMES_ENV", "STAMPED_TAG", "STAMP_TAG", "ExampleFileAnnounce"]


def __getattr__(name: str) -> Any:
    if name == "ExampleFileAnnounce":
        from agent_wait_example._announcer import ExampleFileAnnounce

        return ExampleFileAnnounce
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
