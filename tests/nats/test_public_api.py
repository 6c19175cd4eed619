import os
import subprocess
import sys

import agent_wait.nats


def test_public_api() -> None:
    assert sorted(agent_wait.nats.__all__) == [
        "NatsAnnounce",
        "NatsEntry",
        "NatsEntryOptions",
        "NatsOptions",
    ]


def test_plugin_registers_nats_without_importing_nats_py() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['nats']); assert reg.announcers['nats'].plugin == 'nats'; "
        "import agent_wait.nats; assert 'nats' not in sys.modules, 'nats-py imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
