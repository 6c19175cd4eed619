"""docs/examples/plugin_pubsub_contract.py: the conformance kit passes on Redis pub/sub, read back by a callback thread."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "plugin_pubsub_contract.py"


def test_pubsub_contract_example_passes(redis_url: str) -> None:
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
