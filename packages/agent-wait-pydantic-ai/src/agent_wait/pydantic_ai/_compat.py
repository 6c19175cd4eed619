"""Every Pydantic AI name outside its documented API that agent-wait uses, in one place.

Checked on pydantic-ai-slim 2.68.0: the declared floor, and the newest release when
``nox -s canary`` (the adapter's tests on the newest framework releases) last ran. The adapter's
other modules reach it only through here: a new Pydantic AI release is checked by reading this
file.
"""

from __future__ import annotations

# Pydantic AI streams a run's events only asynchronously (``run_stream_events``); its own sync
# stream (``run_stream_sync``) goes through this bridge, which runs the stream on the event loop
# ``run_sync`` uses, keeps the context manager and the iteration each in one task, and advances
# only as the caller asks. The host's sync ``stream_message`` uses it for the same behaviour.
from pydantic_ai._sync_stream import SyncStreamBridge  # pyright: ignore[reportPrivateUsage]

__all__ = ["SyncStreamBridge"]
