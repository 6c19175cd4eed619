import os
import subprocess
import sys

import agent_wait.eventbridge


def test_public_api() -> None:
    assert sorted(agent_wait.eventbridge.__all__) == ["EventBridgeAnnounce", "EventBridgeOptions"]


def test_plugin_registers_eventbridge_without_importing_the_sdk() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['eventbridge']); assert reg.announcers['eventbridge'].plugin == 'eventbridge'; "
        "assert not {'boto3', 'botocore', 'aiobotocore'} & set(sys.modules), 'SDK imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
