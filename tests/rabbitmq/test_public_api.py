import os
import subprocess
import sys

import agent_wait.rabbitmq


def test_public_api() -> None:
    assert sorted(agent_wait.rabbitmq.__all__) == [
        "RabbitMqAnnounce",
        "RabbitMqEntry",
        "RabbitMqEntryOptions",
        "RabbitMqOptions",
    ]


def test_plugin_registers_rabbitmq_without_importing_pika() -> None:
    code = (
        "import sys; from agent_wait.core._plugins import registry; reg = registry(); "
        "reg.load(['rabbitmq']); assert reg.announcers['rabbitmq'].plugin == 'rabbitmq'; "
        "import agent_wait.rabbitmq; "
        "assert not {'pika', 'aio_pika', 'aiormq'} & set(sys.modules), 'SDK imported'"
    )
    env = {**os.environ, "AGENT_WAIT_DISABLE_PLUGIN_AUTOLOAD": "1"}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)
