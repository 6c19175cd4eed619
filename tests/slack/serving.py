"""``agent-wait slack serve`` and ``agent-wait inbox serve`` in their own processes, configured by
the environment as a deployment is: the fake's Web API, the token and signing secret by name."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.aws_moto import free_port
from tests.slack.fake_slack import SIGNING_SECRET, TOKEN, FakeSlack

AGENT_WAIT = str(Path(sys.executable).with_name("agent-wait"))
# Generous: a loaded 2-core machine runs other suites beside this one.
STARTS_WITHIN = 60.0


def deployment_env(fake: FakeSlack, home: Path, **slack: Any) -> dict[str, str]:
    """The environment of every process: the inbox and Slack announcers, secrets by name."""
    announce = [
        {"use": "sqlite"},
        {
            "use": "slack",
            "token_env": "DEPLOY_SLACK_BOT_TOKEN",
            "signing_secret_env": "DEPLOY_SLACK_SIGNING_SECRET",
            "base_url": fake.base_url,
            "channel": "#approvals",
            "lifecycle_events": True,
            **slack,
        },
    ]
    return {
        **os.environ,
        "AGENT_WAIT_HOME": str(home),
        "AGENT_WAIT_ANNOUNCE": json.dumps(announce),
        "DEPLOY_SLACK_BOT_TOKEN": TOKEN,
        "DEPLOY_SLACK_SIGNING_SECRET": SIGNING_SECRET,
        "PYTHONUNBUFFERED": "1",
    }


class Served:
    """``agent-wait <command> serve`` on a free port, until :meth:`stop`."""

    def __init__(self, command: str, env: dict[str, str], *argv: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process = subprocess.Popen(
            [AGENT_WAIT, command, "serve", "--port", str(self.port), *argv],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + STARTS_WITHIN
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"{command} serve exited: {self.process.communicate()[1]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"{command} serve did not start within {STARTS_WITHIN} s")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)

    def stop(self) -> str:
        """Stop it (SIGTERM) and return what it wrote to stderr."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.process.communicate(timeout=60)[1]
