import os
import subprocess
import sys

import agent_wait.sns


def test_public_api() -> None:
    assert sorted(agent_wait.sns.__all__) == ["SnsAnnounce", "SnsOptions"]


def test_plugin_registers_sns_without_importing_the_sdk() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['sns']); assert reg.announcers['sns'].plugin == 'sns'; "
        "assert not {'boto3', 'botocore', 'aiobotocore'} & set(sys.modules), 'SDK imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
