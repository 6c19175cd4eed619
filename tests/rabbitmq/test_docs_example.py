"""docs/examples/plugin_callback_sdk.py: an announcer on pika's network thread passes the conformance kit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plugin_callback_sdk.py"


def test_callback_sdk_example_passes_the_kit(amqp_url: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", str(EXAMPLE), "-q", "-p", "no:cacheprovider"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=EXAMPLE.parent,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "11 passed" in done.stdout
