"""A worker process killed with SIGKILL where a test says: no clean-up, no ``finally``, nothing caught.

A test runs one message in a fresh interpreter (:func:`killed_worker`) whose code calls
:func:`die` where the worker is to be lost (inside an approved body, in the model call after a
saved step); what the framework had saved by then is all the redelivery finds, as after a
machine is lost. The caller checks the process really died by the signal.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]

_WORKER_SECONDS = 300.0
"""A bound for the worker (imports of a framework on a loaded machine): a hang fails the test."""


def die() -> None:
    """SIGKILL this process, here."""
    os.kill(os.getpid(), signal.SIGKILL)


def killed_worker(code: str, *args: str) -> None:
    """Run ``code`` (Python, ``args`` in ``sys.argv[1:]``) in a worker that must die by SIGKILL.

    Raises:
        AssertionError: The worker ended otherwise (its stderr is in the message).
    """
    worker = subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
        timeout=_WORKER_SECONDS,
    )
    assert worker.returncode == -signal.SIGKILL, (worker.returncode, worker.stderr)
